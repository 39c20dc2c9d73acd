/* crc.c -- CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, the zlib/PNG checksum),
 * written here so that the accountant's serialisation needs no zlib. */
#include "dpgd_core.h"

uint32_t dpgd_crc32(const void *buf, size_t len)
{
  const unsigned char *b = buf;
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; i++) {
    c ^= b[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}
