# The layout's one-way rules, checked on the sources' #include lines. Run:
#   cmake -DSOURCE_DIR=... -DRULE=orchestrator|backends -P this file
# - orchestrator: the command line, study, launching, results, check, model and common helpers
#   never include MPI or LibTorch: they run in the harness process, which starts no MPI and
#   trains nothing. Only the rank side (harness/rank, backends, workloads) does. (That harness
#   also loads no LibTorch is checked on the binary: OrchestratorLoadsNoLibTorch.)
# - backends: backends/ takes what it needs of a point through backends/backend_options.h, filled
#   by the study, and includes nothing of harness/ but harness/common/, so that data flows one way
#   and a new backend plugs in without the study.
function(check_includes what forbidden_regex minimum_count)
  file(GLOB_RECURSE sources ${ARGN})
  set(offenders "")
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" includes REGEX "${forbidden_regex}")
    if(includes)
      list(APPEND offenders "${source}: ${includes}")
    endif()
  endforeach()
  list(LENGTH sources count)
  if(count LESS minimum_count)
    message(FATAL_ERROR "found only ${count} ${what} sources under ${SOURCE_DIR}")
  endif()
  if(offenders)
    list(JOIN offenders "\n" text)
    message(FATAL_ERROR "${what} sources break the layout's rule:\n${text}")
  endif()
  message(STATUS "${count} ${what} sources, none breaks the layout's rule")
endfunction()

if(RULE STREQUAL "orchestrator")
  set(globs "")
  foreach(folder cli study launch results check model common)
    list(APPEND globs "${SOURCE_DIR}/harness/${folder}/*.cpp" "${SOURCE_DIR}/harness/${folder}/*.h")
  endforeach()
  check_includes("orchestrator" "^#include [<\"](mpi\\.h|torch/|ATen/|c10/)" 20 ${globs})
elseif(RULE STREQUAL "backends")
  check_includes("backend" "^#include [<\"]harness/(study|launch|results|check|model|cli|rank)/" 10
                 "${SOURCE_DIR}/backends/*.cpp" "${SOURCE_DIR}/backends/*.h" "${SOURCE_DIR}/backends/*.cu")
else()
  message(FATAL_ERROR "RULE: expected orchestrator or backends, got \"${RULE}\"")
endif()
