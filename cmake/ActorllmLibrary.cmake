# actorllm_library(name [SOURCES file...] [LINKS target...])
#
# One library per folder (the actors' folders make two: cores and shells). Headers are named
# from the repository root ("model/llama_model.hpp"), so every library publishes the root as
# its include directory; which folders a library may include is then decided by LINKS alone,
# and scripts/check_layering.py checks that LINKS names exactly the libraries whose headers
# the folder includes, and that no folder includes one that includes it back.
# Without SOURCES the library is an INTERFACE one (a header-only folder).
function(actorllm_library name)
  cmake_parse_arguments(arg "" "" "SOURCES;LINKS" ${ARGN})
  if(arg_SOURCES)
    add_library(${name} STATIC ${arg_SOURCES})
    target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PUBLIC ${arg_LINKS})
    set_target_properties(${name} PROPERTIES
      UNITY_BUILD ${ACTORLLM_UNITY} UNITY_BUILD_MODE BATCH UNITY_BUILD_BATCH_SIZE 8)
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${arg_LINKS})
  endif()
endfunction()
