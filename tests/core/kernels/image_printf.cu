// A kernel that calls device printf, beside kernels/image_params.cu's that
// do not: test_image_params.c checks that the image readers tell them
// apart (kiln_param_table's may_printf).
#include <cstdio>

extern "C" __global__ void says(int value) { printf("kiln %d\n", value); }
