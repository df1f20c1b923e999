#pragma once
// Serial stand-in for <omp.h> where the compiler has no OpenMP (gpu-only builds only).
inline int omp_get_num_procs() {
  return 1;
}
inline int omp_get_max_threads() {
  return 1;
}
inline int omp_get_num_threads() {
  return 1;
}
inline int omp_get_thread_num() {
  return 0;
}
inline void omp_set_num_threads(int) {}
