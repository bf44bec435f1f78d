# Which MPI the harness is built against (HARNESS_MPI), and what the build knows of it
# (harness/common/mpi_build.h): its family, its library version, and the launcher that starts its
# ranks. Included before find_package(MPI).
#   openmpi  Open MPI (the default): Debian's mpicxx.openmpi and mpirun.openmpi where both MPIs are
#            installed side by side, else mpicxx and mpirun
#   mpich    MPICH, or an MPI of its family (MVAPICH2, Intel MPI, Cray MPICH): mpicxx.mpich and
#            mpiexec.mpich on Debian, else mpicxx and mpiexec (hydra)
#   auto     whatever FindMPI finds: MPI_HOME, the mpicxx on PATH (a cluster's module)
# MPI_CXX_COMPILER and MPIEXEC_EXECUTABLE, given on the command line, win over all three. The
# family is read from the mpi.h found, so that a build of one MPI under the other's name is refused
# here rather than at its first launch.
set(HARNESS_MPI "openmpi" CACHE STRING "The MPI to build against: openmpi, mpich or auto (docs/mpi.md)")
set_property(CACHE HARNESS_MPI PROPERTY STRINGS openmpi mpich auto)
if(NOT HARNESS_MPI MATCHES "^(openmpi|mpich|auto)$")
  message(FATAL_ERROR "HARNESS_MPI: expected openmpi, mpich or auto, got \"${HARNESS_MPI}\"")
endif()

if(NOT HARNESS_MPI STREQUAL "auto")
  # Debian's names carry the MPI's name (the plain ones are alternatives that point to one of them).
  if(HARNESS_MPI STREQUAL "openmpi")
    set(harness_mpi_launcher_names mpirun.openmpi mpirun)
  else()
    set(harness_mpi_launcher_names mpiexec.mpich mpiexec.hydra mpiexec)
  endif()
  if(NOT MPI_CXX_COMPILER)
    find_program(harness_mpicxx NAMES mpicxx.${HARNESS_MPI} mpicxx NO_CACHE)
    if(harness_mpicxx)
      set(MPI_CXX_COMPILER "${harness_mpicxx}" CACHE FILEPATH "MPI C++ compiler wrapper")
    endif()
  endif()
  if(NOT MPIEXEC_EXECUTABLE)
    find_program(harness_mpiexec NAMES ${harness_mpi_launcher_names} NO_CACHE)
    if(harness_mpiexec)
      set(MPIEXEC_EXECUTABLE "${harness_mpiexec}" CACHE FILEPATH "MPI launcher")
    endif()
  endif()
endif()

# After find_package(MPI): the family from mpi.h, the library's own version string, the launcher.
function(harness_describe_mpi)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_CXX)
  unset(HARNESS_MPI_IS_OPENMPI CACHE)  # asked again at every configure: MPI_CXX_COMPILER may have changed
  unset(HARNESS_MPI_IS_MPICH CACHE)
  check_cxx_source_compiles("#include <mpi.h>\n#ifndef OMPI_MAJOR_VERSION\n#error not Open MPI\n#endif\nint main() {}"
                            HARNESS_MPI_IS_OPENMPI)
  check_cxx_source_compiles("#include <mpi.h>\n#ifndef MPICH_VERSION\n#error not of MPICH's family\n#endif\nint main() {}"
                            HARNESS_MPI_IS_MPICH)
  if(HARNESS_MPI_IS_OPENMPI)
    set(family openmpi)
  elseif(HARNESS_MPI_IS_MPICH)
    set(family mpich)
  else()
    message(FATAL_ERROR "The MPI found (${MPI_CXX_INCLUDE_DIRS}) is neither Open MPI nor of MPICH's family: its "
                        "launcher's options are unknown to the harness (harness/launch/mpi_dialect.h)")
  endif()
  if(NOT HARNESS_MPI STREQUAL "auto" AND NOT HARNESS_MPI STREQUAL family)
    message(FATAL_ERROR "HARNESS_MPI=${HARNESS_MPI}, but the mpi.h found (${MPI_CXX_INCLUDE_DIRS}) is ${family}'s: "
                        "give MPI_CXX_COMPILER (the wrapper of the MPI wanted), or HARNESS_MPI=${family}")
  endif()
  # MPI_Get_library_version may be called before MPI_Init: no launcher needed.
  set(probe "${CMAKE_BINARY_DIR}/CMakeFiles/mpi_library_version.cpp")
  file(WRITE "${probe}" "#include <mpi.h>\n#include <cstdio>\nint main() {\n  char text[MPI_MAX_LIBRARY_VERSION_STRING];\n"
                        "  int length = 0;\n  MPI_Get_library_version(text, &length);\n  std::fputs(text, stdout);\n}\n")
  unset(HARNESS_MPI_PROBE_RAN CACHE)  # try_run caches its results: run it at every configure
  unset(HARNESS_MPI_PROBE_BUILT CACHE)
  try_run(HARNESS_MPI_PROBE_RAN HARNESS_MPI_PROBE_BUILT "${CMAKE_BINARY_DIR}/CMakeFiles/mpi_library_version"
          "${probe}" LINK_LIBRARIES MPI::MPI_CXX RUN_OUTPUT_VARIABLE library)
  if(NOT HARNESS_MPI_PROBE_BUILT OR NOT HARNESS_MPI_PROBE_RAN EQUAL 0)
    set(library "unknown")
  endif()
  # Its first line, tabs and spaces squeezed ("MPICH Version: 4.0.2", "Open MPI v4.1.4, package: ...").
  string(REGEX REPLACE "\n.*" "" library "${library}")
  string(REGEX REPLACE "[\t ]+" " " library "${library}")
  string(STRIP "${library}" library)
  string(REPLACE "\\" "\\\\" library "${library}")
  string(REPLACE "\"" "\\\"" library "${library}")
  set(HARNESS_MPI_FAMILY "${family}" PARENT_SCOPE)
  set(HARNESS_MPI_LIBRARY "${library}" PARENT_SCOPE)
  message(STATUS "MPI: ${library} (${family}; launcher ${MPIEXEC_EXECUTABLE})")
endfunction()
