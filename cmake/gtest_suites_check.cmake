# cmake -DBINARY=<gtest binary> -DFILTERS=<"Suite.*,Prefix/Suite.*"> -P gtest_suites_check.cmake
# Fails unless the suites that BINARY --gtest_list_tests lists are exactly those of FILTERS, the
# CTest tests that harness_add_gtest_suites (gtest_suites.cmake) registered for it.
execute_process(COMMAND "${BINARY}" --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests exited ${status}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(listed "")
foreach(line IN LISTS lines)
  # Suite lines start in the first column and end with "." (then, for TEST_P, "  # GetParam() ...").
  if(line MATCHES "^([^ ].*)\\.( .*)?$")
    list(APPEND listed "${CMAKE_MATCH_1}.*")
  endif()
endforeach()
string(REPLACE "," ";" registered "${FILTERS}")
list(SORT listed)
list(SORT registered)
if(NOT listed STREQUAL registered)
  set(missing ${listed})
  list(REMOVE_ITEM missing ${registered})
  set(extra ${registered})
  list(REMOVE_ITEM extra ${listed})
  message(FATAL_ERROR "${BINARY}: suites without a CTest test: [${missing}]; CTest tests without a suite: [${extra}] "
                      "(cmake/gtest_suites.cmake reads TEST, TEST_F and INSTANTIATE_TEST_SUITE_P at the start of a line)")
endif()
message(STATUS "every suite of ${BINARY} has its CTest test")
