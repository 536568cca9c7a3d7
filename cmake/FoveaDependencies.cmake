# Every dependency comes from Debian bookworm packages (see scripts/setup.sh); nothing is downloaded.
find_package(PkgConfig REQUIRED)
pkg_check_modules(FFMPEG REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
pkg_check_modules(FFNVCODEC REQUIRED IMPORTED_TARGET ffnvcodec)
# Image files (src/io/image_*): libjpeg62-turbo-dev, libpng-dev, libwebp-dev.
pkg_check_modules(IMAGE_CODECS REQUIRED IMPORTED_TARGET libjpeg libpng libwebp)
# libjpeg-turbo keeps jconfig.h (its JPEG_LIB_VERSION) in the multiarch include folder, which a
# compiler only searches on its own system: in a sysroot (the GPU machine's) it would take the
# machine's jconfig.h, of another libjpeg version than the library linked ("Wrong JPEG library
# version" at run time). Take the one beside the library linked: <prefix>/lib/<arch>/libjpeg.so
# goes with <prefix>/include/<arch>/jconfig.h.
set(_fovea_libjpeg "${IMAGE_CODECS_LINK_LIBRARIES}")
list(FILTER _fovea_libjpeg INCLUDE REGEX "/libjpeg\\.so$")
cmake_path(GET _fovea_libjpeg PARENT_PATH _fovea_libjpeg_dir)
cmake_path(GET _fovea_libjpeg_dir FILENAME _fovea_arch)
cmake_path(GET _fovea_libjpeg_dir PARENT_PATH _fovea_prefix)
cmake_path(GET _fovea_prefix PARENT_PATH _fovea_prefix)
find_path(JPEG_CONFIG_DIR jconfig.h HINTS "${_fovea_prefix}/include/${_fovea_arch}" "${_fovea_prefix}/include"
          NO_DEFAULT_PATH REQUIRED)
set_property(TARGET PkgConfig::IMAGE_CODECS APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${JPEG_CONFIG_DIR}")
# Live output and the service (issue 24): libmosquitto-dev (metadata to an MQTT broker),
# libcpp-httplib-dev (the HTTP API of `fovea serve`).
pkg_check_modules(MOSQUITTO REQUIRED IMPORTED_TARGET libmosquitto)
# Debian's libmosquitto.pc says libdir=/usr/lib while the library is in the multiarch folder, so
# the imported target carries a bare -lmosquitto that only the default linker path resolves (not
# the GPU machine's sysroot): point it at the library itself.
# (The multiarch suffix is spelled out for compilers that do not report it, like the GPU machine's.)
find_library(MOSQUITTO_LIBRARY mosquitto HINTS ${MOSQUITTO_LIBRARY_DIRS}
             PATH_SUFFIXES ${CMAKE_LIBRARY_ARCHITECTURE} ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu REQUIRED)
set_target_properties(PkgConfig::MOSQUITTO PROPERTIES INTERFACE_LINK_LIBRARIES "${MOSQUITTO_LIBRARY}")
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_package(fmt REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
find_package(nlohmann_json REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(Protobuf REQUIRED)
find_package(Threads REQUIRED)
if(FOVEA_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # A real RTSP server for the live-source tests (libgstrtspserver-1.0-dev with GStreamer's base,
  # good and ugly plugins: videotestsrc, x264enc, rtph264pay). Optional: the GPU machine's
  # sysroot has no GStreamer, and the tests that need it are not built there.
  pkg_check_modules(GST_RTSP_SERVER IMPORTED_TARGET gstreamer-rtsp-server-1.0)
endif()
if(FOVEA_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()
