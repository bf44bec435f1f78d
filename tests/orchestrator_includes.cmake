# The orchestrator (command line, study, launching, results, check, model, common helpers) never includes MPI or
# LibTorch itself: it runs in the harness process, which starts no MPI and trains nothing. Only the
# rank side (harness/rank, backends, workloads) does. Run: cmake -DSOURCE_DIR=... -P this file.
file(GLOB_RECURSE sources
  "${SOURCE_DIR}/harness/cli/*.cpp" "${SOURCE_DIR}/harness/cli/*.h"
  "${SOURCE_DIR}/harness/study/*.cpp" "${SOURCE_DIR}/harness/study/*.h"
  "${SOURCE_DIR}/harness/launch/*.cpp" "${SOURCE_DIR}/harness/launch/*.h"
  "${SOURCE_DIR}/harness/results/*.cpp" "${SOURCE_DIR}/harness/results/*.h"
  "${SOURCE_DIR}/harness/check/*.cpp" "${SOURCE_DIR}/harness/check/*.h"
  "${SOURCE_DIR}/harness/model/*.cpp" "${SOURCE_DIR}/harness/model/*.h"
  "${SOURCE_DIR}/harness/common/*.cpp" "${SOURCE_DIR}/harness/common/*.h")
set(offenders "")
foreach(source IN LISTS sources)
  file(STRINGS "${source}" includes REGEX "^#include [<\"](mpi\\.h|torch/|ATen/|c10/)")
  if(includes)
    list(APPEND offenders "${source}: ${includes}")
  endif()
endforeach()
list(LENGTH sources count)
if(count LESS 20)
  message(FATAL_ERROR "found only ${count} orchestrator sources under ${SOURCE_DIR}/harness")
endif()
if(offenders)
  list(JOIN offenders "\n" text)
  message(FATAL_ERROR "orchestrator sources include MPI or LibTorch:\n${text}")
endif()
message(STATUS "${count} orchestrator sources, none includes MPI or LibTorch")
