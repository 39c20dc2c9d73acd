/* cnn.c -- placeholder: the MNIST CNN lands in the next commit. */
#include "model_internal.h"

static size_t cnn_layout(tensor_spec *t, size_t rows, size_t cols, int n_classes)
{
  (void)t; (void)rows; (void)cols; (void)n_classes;
  DPGD_FAIL(DPGD_ENOTIMPL, "the cnn model is not built yet");
  return 0;
}
static const dpgd_model_type cnn_type = {.name = "cnn", .file_id = 2, .default_chunk = 16, .layout = cnn_layout};
const dpgd_model_type *dpgd_model_cnn = &cnn_type;
