// common.cuh: the definitions every kernel file shares. Each kernels/*.cu includes it; NVRTC gets
// it as a named header at compile time (src/cuda/compile.rs), and its text is part of the kernel
// cache's key, so changing it recompiles everything.
//
// Rust mirrors: the offset tables are Connectivity::offsets() in src/graph/grid.rs, struct Grid is
// GridShape in src/cuda/device.rs, BLOCK is cuda::BLOCK; a unit test (src/cuda/launch/abi_tests.rs)
// compares each pair.

typedef long long i64;
typedef unsigned long long u64;

// Threads per block of every kernel that does not say otherwise; block reductions and the tiled
// kernels' shared arrays are sized by it.
#define BLOCK 256

// Neighbour offsets {dx, dy, dz} in opposite pairs (direction d ^ 1 is the reverse of d), the same
// order as Connectivity::offsets: N4 and N8 use the first 4 and 8 rows of the 2D table, N6 and N26
// the first 6 and 26 of the 3D one.
__constant__ int OFFSETS_2D[8][3] = {
    {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0},
    {1, 1, 0}, {-1, -1, 0}, {1, -1, 0}, {-1, 1, 0},
};
__constant__ int OFFSETS_3D[26][3] = {
    {1, 0, 0},   {-1, 0, 0},  {0, 1, 0},   {0, -1, 0},  {0, 0, 1},   {0, 0, -1},
    {1, 1, 0},   {-1, -1, 0}, {1, -1, 0},  {-1, 1, 0},  {1, 0, 1},   {-1, 0, -1},
    {1, 0, -1},  {-1, 0, 1},  {0, 1, 1},   {0, -1, -1}, {0, 1, -1},  {0, -1, 1},
    {1, 1, 1},   {-1, -1, -1}, {1, 1, -1}, {-1, -1, 1}, {1, -1, 1},  {-1, 1, -1},
    {-1, 1, 1},  {1, -1, -1},
};

// The grid's shape, passed by value to every grid kernel. Node v = x + w * (y + h * z); the host
// checks n < 2^32 - 2, so labels up to n + 1 and w * h fit in 32 bits.
struct Grid {
    unsigned w, h, d;   // dimensions
    unsigned n;         // w * h * d
    unsigned deg;       // 4, 8, 6 or 26
    unsigned is3d;      // which offset table
};

// The neighbour of (x, y, z) in direction dir, or -1 when it lies outside the grid.
__device__ __forceinline__ i64 neighbor(const Grid g, unsigned x, unsigned y, unsigned z,
                                        unsigned dir) {
    const int *o = g.is3d ? OFFSETS_3D[dir] : OFFSETS_2D[dir];
    i64 nx = (i64)x + o[0], ny = (i64)y + o[1], nz = (i64)z + o[2];
    if (nx < 0 || ny < 0 || nz < 0 || nx >= g.w || ny >= g.h || nz >= g.d) return -1;
    return nx + (i64)g.w * (ny + (i64)g.h * nz);
}

__device__ __forceinline__ void coords(const Grid g, unsigned v, unsigned &x, unsigned &y,
                                       unsigned &z) {
    x = v % g.w;
    y = (v / g.w) % g.h;
    z = v / (g.w * g.h); // w * h fits: the host checks n < 2^32
}

// The sum of x over the 32 lanes of a full warp, in lane 0.
__device__ __forceinline__ u64 warp_sum(u64 x) {
    for (int s = 16; s > 0; s >>= 1) x += __shfl_down_sync(0xffffffffu, x, s);
    return x;
}

// Block-wide reductions over BLOCK threads, returned to every thread; every thread of the block
// must call, with sh a shared array of BLOCK entries. The tree order is fixed, so results do not
// depend on timing.
__device__ double block_sum(double x, double *sh) {
    sh[threadIdx.x] = x;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ double block_min(double x, double *sh) {
    sh[threadIdx.x] = x;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmin(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ double block_max(double x, double *sh) {
    sh[threadIdx.x] = x;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmax(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ i64 block_max_i64(i64 x, i64 *sh) {
    sh[threadIdx.x] = x;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && sh[threadIdx.x + s] > sh[threadIdx.x])
            sh[threadIdx.x] = sh[threadIdx.x + s];
        __syncthreads();
    }
    i64 r = sh[0];
    __syncthreads();
    return r;
}
