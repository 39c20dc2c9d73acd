/* png_sample.h -- the MNIST PNG sample the tests read (mnist_png layout, gaps in the
 * indices), written from the IDX files at test time instead of being shipped. */
#ifndef DPGD_TEST_PNG_SAMPLE_H
#define DPGD_TEST_PNG_SAMPLE_H

/* Writes out/training/<label>/<index>.png and out/testing/<label>/<index>.png: the first
 * per_class examples of each class of each split of the dataset directory mnist, 8-bit
 * grayscale, with their IDX pixels; the file name is the example's index in the split.
 * Fails the calling cmocka test (or exits, outside one) when a split cannot be read. */
void tu_png_sample(const char *mnist, const char *out, int per_class);

#endif
