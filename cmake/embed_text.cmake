# Generates a header holding a text file as a string constant `variable`, so that the binary runs
# wherever it is installed without finding its source tree (the SLURM job template).
function(harness_embed_text output variable file)
  file(READ "${file}" text)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${file}")
  get_filename_component(name "${file}" NAME)
  set(text "// Generated from ${name} by cmake/embed_text.cmake.
#pragma once

namespace harness {

inline constexpr const char* ${variable} = R\"harness_text(${text})harness_text\";

}  // namespace harness
")
  if(EXISTS "${output}")
    file(READ "${output}" old_text)
  endif()
  if(NOT old_text STREQUAL text)
    file(WRITE "${output}" "${text}")
  endif()
endfunction()
