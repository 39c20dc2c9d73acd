#!/usr/bin/env python3
"""corrupt_data.py MNIST_DIR PNG_SAMPLE_DIR OUT: writes one corrupted copy of the good
dataset files per defect the readers must refuse (used by data.sh). Standard library
only: the PNG writer below is the minimal one the PNG spec allows (one IDAT, filter 0).
"""
import gzip, os, shutil, struct, sys, zlib

mnist, sample, out = sys.argv[1:4]


def read_idx(name):  # an MNIST file of the directory, gzip or raw
    path = os.path.join(mnist, name)
    return gzip.open(path + ".gz").read() if os.path.exists(path + ".gz") else open(path, "rb").read()


img = read_idx("t10k-images-idx3-ubyte")
lab = read_idx("t10k-labels-idx1-ubyte")
os.makedirs(out, exist_ok=True)


_gz_cache = {}


def gz(data):  # fast level; the same input is compressed once
    key = (len(data), hash(data))
    if key not in _gz_cache:
        _gz_cache[key] = gzip.compress(data, compresslevel=1, mtime=0)
    return _gz_cache[key]


def put(name, data, compress=False):
    path = os.path.join(out, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(gz(data) if compress else data)


def png(color_type, depth, w, h, rows):
    """rows: bytes of one row each, already in the file's sample layout."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def idx_image(i):  # rows of test image i
    base = 16 + 784 * i
    return [img[base + 28 * y: base + 28 * y + 28] for y in range(28)]


# --- IDX files (single-file cases are read with 'dpgd data info FILE') -------------
put("magic.gz", b"\0\0\x08\x02" + lab[4:], compress=True)               # wrong magic
put("truncated", img[: len(img) // 3])                              # raw, cut short
good_gz = gz(img)
put("truncated.gz", good_gz[: len(good_gz) // 2])                   # gzip stream cut
put("trailing", lab + b"xyz")                                       # raw + 3 bytes
put("trailing.gz", lab + b"\x07\x07", compress=True)                      # decompressed too long
bad = bytearray(good_gz); bad[-8] ^= 0xFF                           # CRC-32 trailer wrong
put("crc.gz", bytes(bad))
bad = bytearray(good_gz); bad[10] = 0x07                            # invalid deflate block type
put("badblock.gz", bytes(bad))
put("notgzip.gz", b"\x1f\x8b\x08\x00" + b"garbage-not-deflate" * 4)          # gzip magic, no deflate
labels10 = bytearray(lab); labels10[8 + 1234] = 10                  # label 10 of example 1234
put("label10.gz", bytes(labels10), compress=True)

# Directory cases: the small test pair doubles as the train split.
def pair_dir(name, images, labels):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for split in ("train", "t10k"):
        put(f"{name}/{split}-images-idx3-ubyte.gz", images, compress=True)
        put(f"{name}/{split}-labels-idx1-ubyte.gz", labels, compress=True)

pair_dir("count", img, struct.pack(">II", 0x801, 9999) + lab[8:-1])  # 10000 images, 9999 labels
pair_dir("range", img, bytes(labels10))
pair_dir("good", img, lab)
os.remove(os.path.join(out, "good/t10k-labels-idx1-ubyte.gz"))
shutil.copytree(os.path.join(out, "good"), os.path.join(out, "nolabels"))
put("good/t10k-labels-idx1-ubyte.gz", lab, compress=True)

# --- PNG folders (copies of the sample, one file spoiled in training/) -------------
def png_case(name, label, index, data):
    d = os.path.join(out, name)
    shutil.copytree(sample, d)
    path = os.path.join(d, "training", str(label), f"{index}.png")
    with open(path, "wb") as f:
        f.write(data)

first = sorted(os.listdir(os.path.join(sample, "training", "3")), key=lambda s: int(s[:-4]))[0]
i3 = int(first[:-4])                                   # an existing file: training/3/<i3>.png
train_img = read_idx("train-images-idx3-ubyte")
rows = [train_img[16 + 784 * i3 + 28 * y: 16 + 784 * i3 + 28 * y + 28] for y in range(28)]
png_case("png_rgb", 3, i3, png(2, 8, 28, 28, [bytes(v for p in r for v in (p, p, p)) for r in rows]))
png_case("png_16bit", 3, i3, png(0, 16, 28, 28, [bytes(v for p in r for v in (p, p)) for r in rows]))
png_case("png_size", 3, i3, png(0, 8, 28, 27, rows[:27]))
png_case("png_notpng", 3, i3, lab[:200])
with open(os.path.join(sample, "training", "3", first), "rb") as f:
    good_png = f.read()
png_case("png_truncated", 3, i3, good_png[: len(good_png) // 2])
png_case("png_same", 3, i3, png(0, 8, 28, 28, rows))   # control: our writer, same pixels

# A full (gap-free) PNG folder of the first 20 test images, and the same with a gap.
for name, skip in (("png_full", None), ("png_gap", 7)):
    for split in ("training", "testing"):
        for i in range(20):
            if i == skip and split == "training":
                continue
            put(f"{name}/{split}/{lab[8 + i]}/{i}.png", png(0, 8, 28, 28, idx_image(i)))
