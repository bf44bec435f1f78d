# The rank side's backends take what they need of a point through backends/backend_options.h,
# filled by the study: nothing in backends/ includes the orchestrator's harness/study/ (or any
# other orchestrator folder), so data flows one way and a new backend plugs in without the study.
# Run: cmake -DSOURCE_DIR=... -P this file.
file(GLOB sources "${SOURCE_DIR}/backends/*.cpp" "${SOURCE_DIR}/backends/*.h" "${SOURCE_DIR}/backends/*.cu")
set(offenders "")
foreach(source IN LISTS sources)
  file(STRINGS "${source}" includes
       REGEX "^#include [<\"]harness/(study|launch|results|check|model|cli|rank)/")
  if(includes)
    list(APPEND offenders "${source}: ${includes}")
  endif()
endforeach()
list(LENGTH sources count)
if(count LESS 10)
  message(FATAL_ERROR "found only ${count} backend sources under ${SOURCE_DIR}/backends")
endif()
if(offenders)
  list(JOIN offenders "\n" text)
  message(FATAL_ERROR "backends include the orchestrator or the rank program:\n${text}")
endif()
message(STATUS "${count} backend sources, none includes harness/ beyond harness/common/")
