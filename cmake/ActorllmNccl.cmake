# NCCL, for tensor parallelism across CUDA devices: the toolkit's own copy or the system's
# (libnccl-dev). Where it is missing, the CUDA kernels build without it and
# --tensor-parallel-size > 1 on --device cuda is refused with that reason.
function(actorllm_link_nccl target)
  find_library(ACTORLLM_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(ACTORLLM_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(ACTORLLM_NCCL_LIBRARY AND ACTORLLM_NCCL_INCLUDE)
    target_link_libraries(${target} PUBLIC ${ACTORLLM_NCCL_LIBRARY})
    target_include_directories(${target} SYSTEM PUBLIC ${ACTORLLM_NCCL_INCLUDE})
    target_compile_definitions(${target} PUBLIC ACTORLLM_HAS_NCCL=1)
    message(STATUS "NCCL: ${ACTORLLM_NCCL_LIBRARY} (tensor parallelism on CUDA)")
  else()
    message(STATUS "NCCL: not found; no tensor parallelism on CUDA")
  endif()
endfunction()
