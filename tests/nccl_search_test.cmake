# Which NCCL cmake/nccl.cmake takes, on fake layouts (a header with a version, an empty library
# file): HARNESS_NCCL_ROOT first, then beside LibTorch (PyTorch's wheel), then the CUDA toolkit;
# a HARNESS_NCCL_ROOT without NCCL stops configure. Run:
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -P this file
cmake_minimum_required(VERSION 3.25)
set(CMAKE_FIND_LIBRARY_PREFIXES lib)  # script mode sets no platform
set(CMAKE_FIND_LIBRARY_SUFFIXES .so)
include(${SOURCE_DIR}/cmake/nccl.cmake)

function(fake_nccl root version library)
  string(REPLACE "." ";" parts "${version}")
  list(GET parts 0 major)
  list(GET parts 1 minor)
  list(GET parts 2 patch)
  file(WRITE "${root}/include/nccl.h"
       "#define NCCL_MAJOR ${major}\n#define NCCL_MINOR ${minor}\n#define NCCL_PATCH ${patch}\n")
  file(WRITE "${root}/${library}" "")
endfunction()

set(site "${WORK_DIR}/site-packages")
set(toolkit "${WORK_DIR}/cuda")
set(own "${WORK_DIR}/own")
if(NOT DEFINED CASE)
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${site}/torch")
  fake_nccl("${site}/nvidia/nccl" 2.27.3 lib/libnccl.so.2)  # the wheel has no libnccl.so link
  fake_nccl("${toolkit}" 2.28.9 lib/libnccl.so)
  fake_nccl("${own}" 2.26.1 lib64/libnccl.so)
endif()

function(expect_found root torch want_version want_library)
  set(HARNESS_NCCL_ROOT "${root}")
  set(TORCH_INSTALL_PREFIX "${torch}")
  set(CUDAToolkit_FOUND TRUE)
  set(CUDAToolkit_INCLUDE_DIRS "${toolkit}/include")
  harness_find_nccl()
  if(NOT HARNESS_NCCL_VERSION STREQUAL want_version OR NOT HARNESS_NCCL_LIBRARY STREQUAL want_library)
    message(FATAL_ERROR "HARNESS_NCCL_ROOT=\"${root}\", LibTorch at \"${torch}\": expected NCCL ${want_version} "
                        "(${want_library}), got \"${HARNESS_NCCL_VERSION}\" (${HARNESS_NCCL_LIBRARY})")
  endif()
endfunction()

if(CASE STREQUAL "bad_root")
  expect_found("${WORK_DIR}/nothing-here" "${site}/torch" "" "")
  return()
endif()
expect_found("${own}" "${site}/torch" 2.26.1 "${own}/lib64/libnccl.so")
expect_found("" "${site}/torch" 2.27.3 "${site}/nvidia/nccl/lib/libnccl.so.2")
expect_found("" "${WORK_DIR}/no-torch" 2.28.9 "${toolkit}/lib/libnccl.so")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${SOURCE_DIR} -DWORK_DIR=${WORK_DIR} -DCASE=bad_root
                        -P ${CMAKE_CURRENT_LIST_FILE}
                RESULT_VARIABLE status ERROR_VARIABLE errors OUTPUT_QUIET)
string(REGEX REPLACE "[ \n]+" " " errors "${errors}")
if(status EQUAL 0 OR NOT errors MATCHES "HARNESS_NCCL_ROOT=${WORK_DIR}/nothing-here: expected include/nccl.h")
  message(FATAL_ERROR "a HARNESS_NCCL_ROOT without NCCL: expected configure to stop naming it, got exit ${status}: ${errors}")
endif()
message(STATUS "cmake/nccl.cmake takes HARNESS_NCCL_ROOT, then LibTorch's wheel, then the toolkit")
