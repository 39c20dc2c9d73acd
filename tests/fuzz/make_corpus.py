#!/usr/bin/env python3
"""make_corpus.py DPGD [CORPUS_ROOT] -- writes the committed seed corpora of the fuzz
targets into CORPUS_ROOT (default tests/fuzz/corpus), one folder per target. Real
formats come from a real run: DPGD (the dpgd binary) trains softmax regression on a tiny
synthetic IDX set (6 x 6 images, 30 + 10 examples), once with research noise and once
secure, and its checkpoint.bin, model.bin, metrics.csv, points.csv and summary.json (and
the checkpoint's acct/rngstep/rngquery sections) become seeds; the rest is written here
(accountant states of every mechanism, PNG variants, .sweep files, edge-case CSV/JSON).
PNG seeds are MNIST images, written from data/mnist's IDX files by the test program
tests/data/mnist_png_sample of DPGD's build tree. Every file is < 64 KB.
The run's files carry its wall time and build id, so a rerun rewrites a few bytes."""
import glob, os, random, shutil, struct, subprocess, sys, tempfile, zlib

dpgd = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "corpus")
rnd = random.Random(2385)


def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < 65536, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- a tiny real run ------------------------------------------------------------------
tmp = tempfile.mkdtemp(prefix="dpgd-corpus-")
os.makedirs(os.path.join(tmp, "data"))
for prefix, n in (("train", 30), ("t10k", 10)):
    imgs = struct.pack(">IIII", 0x803, n, 6, 6) + bytes(rnd.randrange(256) for _ in range(n * 36))
    labs = struct.pack(">II", 0x801, n) + bytes(k % 10 for k in range(n))
    open(os.path.join(tmp, "data", prefix + "-images-idx3-ubyte"), "wb").write(imgs)
    open(os.path.join(tmp, "data", prefix + "-labels-idx1-ubyte"), "wb").write(labs)
ini = os.path.join(tmp, "tiny.ini")
open(ini, "w").write("[model]\ntype = softmax\n[train]\nsteps = 5\nlr = 0.1\nseed = 7\n"
                     "eval_every = 2\n[filter]\nenabled = true\nk = 3\n[privacy]\nclip = 1\n"
                     "delta = 1e-5\nsigma = 2.385\n[stopping]\nqueries = 2\nevery = 1\n"
                     "[output]\ncheckpoint_every = 2\ndiagnostics = true\n")
runs = {}
for rng in ("research", "secure"):
    out = os.path.join(tmp, rng)
    subprocess.run([dpgd, "train", "--config", ini, "--set", "data.dir=" + os.path.join(tmp, "data"),
                    "--set", "train.rng=" + rng, "--out", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs[rng] = {f: open(os.path.join(out, f), "rb").read()
                 for f in ("checkpoint.bin", "model.bin", "metrics.csv", "points.csv", "summary.json")}
shutil.rmtree(tmp)


def sections(ck):
    """The checkpoint's sections by name (train/ckpt.c layout, little-endian host)."""
    n = struct.unpack_from("<Q", ck, 24)[0]
    off, out = 32 + n * 16, {}
    for i in range(n):
        name = ck[32 + i * 16:40 + i * 16].rstrip(b"\0").decode()
        ln = struct.unpack_from("<Q", ck, 40 + i * 16)[0]
        out[name] = ck[off:off + ln]
        off += ln
    return out


for rng, files in runs.items():
    put("fuzz_ckpt", rng + ".ckpt", files["checkpoint.bin"])
    put("fuzz_model", rng + ".model", files["model.bin"])
    put("fuzz_csv", rng + "-metrics.csv", files["metrics.csv"])
    put("fuzz_csv", rng + "-points.csv", files["points.csv"])
    put("fuzz_summary", rng + ".json", files["summary.json"])
    put("fuzz_run_dir", rng + "-with-points",
        files["summary.json"] + b"\0" + files["metrics.csv"] + b"\0" + files["points.csv"])
    put("fuzz_run_dir", rng, files["summary.json"] + b"\0" + files["metrics.csv"])
    sec = sections(files["checkpoint.bin"])
    put("fuzz_acct", rng + ".acct", sec["acct"])
    if sec["rngstep"]:
        put("fuzz_rng", rng + "-step.state", sec["rngstep"])
        put("fuzz_rng", rng + "-query.state", sec["rngquery"])

# ---- accountant states of every mechanism (accounting/serialize.c) --------------------
def acct(entries):
    b = b"DPGDACCT" + struct.pack("<QQ", 1, len(entries))
    for kind, count, p0, p1, pq in entries:
        b += struct.pack("<QQddQ", kind, count, p0, p1, len(pq[0]) if pq else 0)
        if pq:
            b += struct.pack("<%dd" % len(pq[0]), *pq[0]) + struct.pack("<%dd" % len(pq[1]), *pq[1])
    return b + struct.pack("<I", zlib.crc32(b))

put("fuzz_acct", "all-kinds.acct", acct([(1, 3, 0.2385, 0, None), (2, 2, 0.5, 0, None),
                                         (3, 1, 0.75, 0, None),
                                         (4, 1, 0, 0, ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])),
                                         (5, 10, 0.01, 2.385, None)]))
put("fuzz_acct", "empty.acct", acct([]))

# ---- noise-stream states: "dpgdcc20" and the ChaCha20 stream's position (train/noise.c) --
def stream_state(position):
    return b"dpgdcc20" + struct.pack("<Q", position)

put("fuzz_rng", "seeded.state", stream_state(0))
put("fuzz_rng", "mid-block.state", stream_state(16 * 5 + 7))
put("fuzz_rng", "far.state", stream_state((1 << 64) - 6))

# ---- model files: the cnn's header (its parameters are too many for a seed) ----------
cnn = b"DPGDMODL" + struct.pack("<IIIIIIQ", 1, 2, 1, 28, 28, 10, 0)
put("fuzz_model", "cnn-header.model", cnn + struct.pack("<I", zlib.crc32(cnn)))

# ---- PNG: MNIST samples and variants a folder may hold --------------------------------
sample_dir = tempfile.mkdtemp()
subprocess.run([os.path.join(os.path.dirname(dpgd), "..", "tests", "data", "mnist_png_sample"),
                os.path.join(here, "..", "..", "data", "mnist"), os.path.join(sample_dir, "s")], check=True)
pngs = sorted(glob.glob(os.path.join(sample_dir, "s", "*", "*", "*.png")))
for p in pngs[:4] + pngs[-2:]:
    put("fuzz_png", "mnist-" + os.path.relpath(p, os.path.dirname(os.path.dirname(os.path.dirname(p)))).replace("/", "-"),
        open(p, "rb").read())
shutil.rmtree(sample_dir)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(w, h, depth, colour, rows, interlace=0, extra=b""):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, interlace)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))

g = bytes(rnd.randrange(256) for _ in range(5 * 4))
rows8 = b"".join(b"\0" + g[y * 5:(y + 1) * 5] for y in range(4))
put("fuzz_png", "gray8.png", png(5, 4, 8, 0, rows8))
put("fuzz_png", "gray8-filters.png", png(5, 4, 8, 0, b"".join(bytes([y % 5]) + g[y * 5:(y + 1) * 5] for y in range(4))))
# Adam7 interlaced 5 x 4: the passes' sub-images row by row, each row with filter 0.
passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
inter = b""
for x0, y0, dx, dy in passes:
    xs = range(x0, 5, dx)
    for y in range(y0, 4, dy):
        if len(xs):
            inter += b"\0" + bytes(g[y * 5 + x] for x in xs)
put("fuzz_png", "gray8-interlaced.png", png(5, 4, 8, 0, inter, interlace=1))
put("fuzz_png", "gray16.png", png(3, 2, 16, 0, b"\0" + bytes(6) + b"\0" + bytes(range(6))))
put("fuzz_png", "gray1.png", png(8, 2, 1, 0, b"\0\xa5\0\x5a"))
put("fuzz_png", "rgb.png", png(2, 2, 8, 2, b"\0" + bytes(6) + b"\0" + bytes(range(6))))
put("fuzz_png", "palette.png", png(2, 1, 8, 3, b"\0\0\1", extra=chunk(b"PLTE", bytes(6))))
put("fuzz_png", "gray8-text.png", png(1, 1, 8, 0, b"\0\x80", extra=chunk(b"tEXt", b"Comment\0dpgd")))
put("fuzz_png", "gray8-truncated.png", png(5, 4, 8, 0, rows8)[:-20])

# ---- CSV and JSON edge cases (train/cli/plot_run.c) ---------------------------------------
put("fuzz_csv", "comments.csv", "# a comment\n# another\nstep,x,y\n1,2.385,\n2,,-1e-3\n3,1e300,4")
put("fuzz_csv", "crlf.csv", "a,b\r\n1,2\r\n")
put("fuzz_summary", "minimal.json",
    '{"algorithm": "plain", "mu": 0.5, "delta": 1e-5, "test_acc": 0.9, "steps": 10, '
    '"eps": {"exact": 1.5}, "nonprivate": {"wall_s": 1, "x": [1, {"y": null}, true, "\\u00e9\\n"]}}')
put("fuzz_summary", "nested.json", '{"a": [[[[{"b": [false]}]]]], "eps": {}}')

# ---- .sweep files (train/cli/sweep_spec.c) -------------------------------------------------
put("fuzz_sweep", "grid.sweep",
    "[sweep]\nconfig = a.ini /abs/b.ini\nset = train.steps=5\ngrid = privacy.sigma=1,2.385,4\n"
    "grid = train.lr=0.1,0.2\nseeds = 1-3,8\njobs = 2\nout = runs/sweep\n")
put("fuzz_sweep", "minimal.sweep", "[sweep]\nconfig=x.ini\nseeds=7\n")
put("fuzz_sweep", "comments.sweep", "; comment\n[sweep]\n# c\nconfig = c.ini\ngrid = model.type=softmax,cnn\n"
    "seeds = 1,4,7\n")
