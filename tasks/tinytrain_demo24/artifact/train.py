"""tinytrain: train the soft-max classifier of the paper on the station readings.

Usage:
    python train.py --data data/stations.csv --epochs 1 --out runs/smoke

Writes <out>/checkpoint.npz (weights W, bias b, epoch) and <out>/metrics.json
(epoch, loss, accuracy, n_train, n_features, n_classes, seconds, numpy).
"""

import argparse
import json
import os
import sys
import time

import numpy as np


def load_csv(path):
    """Rows of `f1,...,fk,label` with a header line; returns features and integer labels."""
    raw = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=np.float)
    if raw.ndim != 2 or raw.shape[1] < 2:
        sys.exit("tinytrain: %s does not hold feature columns and a label column" % path)
    features = raw[:, :-1]
    labels = raw[:, -1].astype(np.int)
    return features, labels


def standardise(x):
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    std[std == 0] = 1.0
    return (x - mean) / std


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def cross_entropy(p, y):
    return float(-np.mean(np.log(p[np.arange(len(y)), y] + 1e-12)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="data/stations.csv")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs/default")
    args = ap.parse_args(argv)

    start = time.time()
    x, y = load_csv(args.data)
    x = standardise(x)
    n, k = x.shape
    classes = int(y.max()) + 1
    rng = np.random.RandomState(args.seed)
    w = np.zeros((k, classes), dtype=np.float)
    b = np.zeros(classes, dtype=np.float)

    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n)
        for i in range(0, n, args.batch_size):
            idx = order[i : i + args.batch_size]
            p = softmax(x[idx] @ w + b)
            p[np.arange(len(idx)), y[idx]] -= 1.0
            w -= args.lr * x[idx].T @ p / len(idx)
            b -= args.lr * p.mean(axis=0)
        p = softmax(x @ w + b)
        loss = cross_entropy(p, y)
        acc = float(np.mean(p.argmax(axis=1) == y))
        print("epoch %d  loss %.4f  accuracy %.3f" % (epoch, loss, acc), flush=True)

    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "checkpoint.npz"), W=w, b=b, epoch=args.epochs)
    metrics = {
        "epoch": args.epochs,
        "loss": loss,
        "accuracy": acc,
        "n_train": int(n),
        "n_features": int(k),
        "n_classes": classes,
        "seconds": round(time.time() - start, 3),
        "numpy": np.__version__,
    }
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    print("wrote %s" % os.path.join(args.out, "checkpoint.npz"))
    print("wrote %s" % os.path.join(args.out, "metrics.json"))


if __name__ == "__main__":
    main()
