# fovea_library(NAME SOURCES ... [CUDA_SOURCES ...] DEPS ...): one library per folder under src/.
# Warnings are errors for fovea's own code only (third-party headers are included as SYSTEM).
function(fovea_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion
    -Wno-sign-conversion>)
  if(FOVEA_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()

function(fovea_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;CUDA_SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(sources ${ARG_SOURCES})
  if(FOVEA_HAVE_CUDA)
    list(APPEND sources ${ARG_CUDA_SOURCES})
  endif()
  add_library(fovea_${name} STATIC ${sources})
  add_library(fovea::${name} ALIAS fovea_${name})
  target_include_directories(fovea_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(fovea_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  if(FOVEA_HAVE_CUDA)
    target_compile_definitions(fovea_${name} PUBLIC FOVEA_HAVE_CUDA=1)
  endif()
  fovea_warnings(fovea_${name})
endfunction()
