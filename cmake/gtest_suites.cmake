# harness_add_gtest_suites(TARGET SOURCES... [PROPERTIES ...]): one CTest test per GoogleTest
# suite of TARGET, named "<Suite>.*" and run as `TARGET --gtest_filter=<Suite>.*`, instead of
# gtest_discover_tests' one per test.
#
# Why: every process of a binary linked with LibTorch spends about 0.4 s of CPU in LibTorch's
# static initialisers before main (a program that only links libtorch_cpu takes 0.40 s user
# here), more than most unit tests take to run: the 292 unit tests took 75 s at a process each,
# 16 s at a process per suite (docs/tests.md).
#
# The suites are read from the sources at configure time: TEST(Suite, ...) and TEST_F(Suite, ...)
# give "Suite.*"; TEST_P(Suite, ...) gives "Prefix/Suite.*" for each
# INSTANTIATE_TEST_SUITE_P(Prefix, Suite, ...) in the same file. A change to a source re-runs
# configure, so a new suite is never left out.
set(HARNESS_GTEST_SUITES_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/gtest_suites_check.cmake")

function(harness_add_gtest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;PROPERTIES")
  set(filters "")
  foreach(source IN LISTS arg_SOURCES)
    set(path "${CMAKE_CURRENT_SOURCE_DIR}/${source}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
    file(READ "${path}" text)
    string(REGEX MATCHALL "(^|\n)TEST(_F)?\\([A-Za-z0-9_]+," plain "${text}")
    foreach(match IN LISTS plain)
      string(REGEX REPLACE ".*\\(([A-Za-z0-9_]+),$" "\\1" suite "${match}")
      list(APPEND filters "${suite}.*")
    endforeach()
    string(REGEX MATCHALL "INSTANTIATE_TEST_SUITE_P\\([ \t\r\n]*[A-Za-z0-9_]+,[ \t\r\n]*[A-Za-z0-9_]+"
           instantiations "${text}")
    foreach(match IN LISTS instantiations)
      string(REGEX REPLACE ".*\\([ \t\r\n]*([A-Za-z0-9_]+),[ \t\r\n]*([A-Za-z0-9_]+)$" "\\1/\\2" suite "${match}")
      list(APPEND filters "${suite}.*")
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES filters)
  if(NOT filters)
    message(FATAL_ERROR "harness_add_gtest_suites(${target}): no TEST, TEST_F or instantiated TEST_P in its sources")
  endif()
  foreach(filter IN LISTS filters)
    add_test(NAME "${filter}" COMMAND ${target} "--gtest_filter=${filter}")
    if(arg_PROPERTIES)
      set_tests_properties("${filter}" PROPERTIES ${arg_PROPERTIES})
    endif()
  endforeach()
  # What the reading above could miss (a suite from a macro, an indented TEST): the binary's own
  # list of suites must be exactly these.
  string(REPLACE ";" "," filter_list "${filters}")
  add_test(NAME "${target}_suites_are_all_registered"
           COMMAND ${CMAKE_COMMAND} "-DBINARY=$<TARGET_FILE:${target}>" "-DFILTERS=${filter_list}"
                   -P "${HARNESS_GTEST_SUITES_SCRIPT}")
endfunction()
