// Does nvcc compile `nv == V` with nv = max(0, min(V, T - tf)) correctly?  (NOTES 42.2: in
// cln_lookback.cuh's first version the 16-byte path it guarded was taken inverted.)  Prints,
// for T - tf from -4 to 8, the clamped count, the guard in that form and in the form
// `tf + V <= T`, as one kernel computes them; the two guards must agree.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/lookback/vec_repro.cu -o /tmp/vr && /tmp/vr
// On the H200 with nvcc 13.0.88: -O3, 8 of 13 differ (the first form is true for T - tf = 0..4
// and false above); with -Xptxas -O0, none (nvidia-h200-s41-vec-repro.log, NOTES 42.2).
// Exit status 1 where they differ.
#include <cuda_runtime.h>

#include <cstdio>

constexpr int V = 4;

__global__ void guards(const int* T, const int* tf, int n, int* nv_out, int* a_out, int* b_out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int nv = max(0, min(V, T[i] - tf[i]));
  const bool a = (T[i] % V == 0) && nv == V;      // the first version's form
  const bool b = (T[i] % V == 0) && tf[i] + V <= T[i];  // the fixed form
  nv_out[i] = nv;
  a_out[i] = a;
  b_out[i] = b;
}

int main() {
  const int n = 13;
  int hT[n], htf[n];
  for (int i = 0; i < n; ++i) hT[i] = 668, htf[i] = 668 - (i - 4);  // T - tf = -4 .. 8
  int *T, *tf, *nv, *a, *b;
  cudaMalloc(&T, n * 4), cudaMalloc(&tf, n * 4), cudaMalloc(&nv, n * 4);
  cudaMalloc(&a, n * 4), cudaMalloc(&b, n * 4);
  cudaMemcpy(T, hT, n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(tf, htf, n * 4, cudaMemcpyHostToDevice);
  guards<<<1, 32>>>(T, tf, n, nv, a, b);
  int hnv[n], ha[n], hb[n];
  cudaMemcpy(hnv, nv, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(ha, a, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpy(hb, b, n * 4, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    std::printf("T - tf = %2d: nv %d  nv == V %d  tf + V <= T %d%s\n", hT[i] - htf[i], hnv[i], ha[i],
                hb[i], ha[i] != hb[i] ? "   <- differ" : "");
    bad += ha[i] != hb[i];
  }
  std::printf("%d of %d differ (%s)\n", bad, n, cudaGetErrorString(cudaGetLastError()));
  return bad != 0;
}
