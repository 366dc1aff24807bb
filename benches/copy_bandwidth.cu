// copy_bandwidth.cu: the GPU's device-to-device copy bandwidth, the yardstick for the solver
// kernels' achieved memory throughput (docs/benchmarks.md). Build and run on the GPU machine:
//   nvcc -O3 -o copy_bandwidth benches/copy_bandwidth.cu && ./copy_bandwidth
// Reports cudaMemcpy (device to device) and a plain copy kernel, counting bytes read + written.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void copy_kernel(const int4 *__restrict__ src, int4 *__restrict__ dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

int main() {
    const size_t bytes = (size_t)2 << 30; // 2 GiB each way: far beyond the 50 MB L2
    void *a, *b;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc failed\n");
        return 1;
    }
    cudaMemset(a, 1, bytes);
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    const int reps = 10;
    float ms;
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); // warm-up
    cudaEventRecord(t0);
    for (int r = 0; r < reps; ++r) cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    cudaEventElapsedTime(&ms, t0, t1);
    printf("cudaMemcpy D2D: %.0f GB/s (read + write)\n", 2.0 * bytes * reps / (ms * 1e6));
    int sms;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    size_t n = bytes / sizeof(int4);
    copy_kernel<<<sms * 8, 512>>>((const int4 *)a, (int4 *)b, n);
    cudaEventRecord(t0);
    for (int r = 0; r < reps; ++r) copy_kernel<<<sms * 8, 512>>>((const int4 *)a, (int4 *)b, n);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    cudaEventElapsedTime(&ms, t0, t1);
    printf("copy kernel:    %.0f GB/s (read + write)\n", 2.0 * bytes * reps / (ms * 1e6));
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
