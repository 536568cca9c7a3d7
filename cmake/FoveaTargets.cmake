# fovea_library(NAME [WHOLE_ARCHIVE] SOURCES ... [CUDA_SOURCES ...] DEPS ...): one library per folder
# under src/. WHOLE_ARCHIVE links every object into consumers, for libraries whose parts register
# themselves from static initializers (runtime ops) and so are never referenced by name.
# Warnings are errors for fovea's own code only (third-party headers are included as SYSTEM).
# -Wno-missing-field-initializers: C++20 designated initializers (OpDef{.op_type = ...}) leave
# the other members at their defaults on purpose; GCC would flag each one.
function(fovea_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion
    -Wno-sign-conversion -Wno-missing-field-initializers>)
  if(FOVEA_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()

function(fovea_library name)
  cmake_parse_arguments(ARG "WHOLE_ARCHIVE" "" "SOURCES;CUDA_SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(sources ${ARG_SOURCES})
  if(FOVEA_HAVE_CUDA)
    list(APPEND sources ${ARG_CUDA_SOURCES})
  endif()
  add_library(fovea_${name} STATIC ${sources})
  if(ARG_WHOLE_ARCHIVE)
    add_library(fovea_${name}_whole INTERFACE)
    target_link_libraries(fovea_${name}_whole INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,fovea_${name}>")
    add_library(fovea::${name} ALIAS fovea_${name}_whole)
  else()
    add_library(fovea::${name} ALIAS fovea_${name})
  endif()
  target_include_directories(fovea_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(fovea_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  if(FOVEA_HAVE_CUDA)
    target_compile_definitions(fovea_${name} PUBLIC FOVEA_HAVE_CUDA=1)
  endif()
  fovea_warnings(fovea_${name})
endfunction()
