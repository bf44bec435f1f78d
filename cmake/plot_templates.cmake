# Generates harness/plot_templates.h: the plots/*.gp templates as string constants, so the
# binary can draw plots wherever it runs without finding its source tree.
function(harness_embed_plot_templates output)
  set(entries "")
  foreach(template IN LISTS ARGN)
    get_filename_component(name "${template}" NAME_WE)
    file(READ "${template}" text)
    string(APPEND entries "    {\"${name}\", R\"harness_gp(${text})harness_gp\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${template}")
  endforeach()
  set(text "// Generated from plots/*.gp by cmake/plot_templates.cmake.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace harness {

inline const std::vector<std::pair<std::string, std::string>> kPlotTemplates = {
${entries}};

}  // namespace harness
")
  if(EXISTS "${output}")
    file(READ "${output}" old_text)
  endif()
  if(NOT old_text STREQUAL text)
    file(WRITE "${output}" "${text}")
  endif()
endfunction()
