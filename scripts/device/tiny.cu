// A short-lived CUDA process: create a context, hold 256 MiB for a moment, exit.
#include <cuda_runtime.h>
int main() { void *p = 0; if (cudaMalloc(&p, 256u << 20) != cudaSuccess) return 1; cudaMemset(p, 0, 256u << 20); cudaDeviceSynchronize(); cudaFree(p); return 0; }
