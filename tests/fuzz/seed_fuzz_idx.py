#!/usr/bin/env python3
"""seed_fuzz_idx.py DIR: writes small valid IDX files (raw and gzip, images and
labels, one gzip split into two members) as the starting corpus of fuzz_idx."""
import gzip, os, random, struct, sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rnd = random.Random(2385)
labels = struct.pack(">II", 0x801, 12) + bytes(rnd.randrange(10) for _ in range(12))
images = struct.pack(">IIII", 0x803, 3, 5, 4) + bytes(rnd.randrange(256) for _ in range(60))
seeds = {"labels": labels, "images": images,
         "labels.gz": gzip.compress(labels, mtime=0), "images.gz": gzip.compress(images, mtime=0),
         "images2.gz": gzip.compress(images[:20], mtime=0) + gzip.compress(images[20:], mtime=0)}
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
