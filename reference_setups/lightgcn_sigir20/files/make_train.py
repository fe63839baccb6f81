"""Write a stand-in Data/<dataset>/train.txt in LightGCN's format, from the shipped test.txt.

Used only when the repository's own train.txt is absent (the source mirror this was validated
from keeps no file of 4 MiB or more; a real clone of kuandeng/LightGCN has it). Format, as
utility/load_data.py reads it: one line per user, "<user id> <item id> <item id> ...".

Every user of test.txt gets --per-user items drawn (seeded) from the test items' popularity,
never one of the user's own test items, so the split stays disjoint like the real one, the user
and item counts stay those of the real dataset (load_data takes the largest ids of both files),
and a model that learns item popularity from train.txt scores above chance on test.txt.
"""

import argparse
import bisect
import random
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset_dir", type=Path, help="e.g. Data/gowalla (holds test.txt)")
    parser.add_argument("--per-user", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2020)
    args = parser.parse_args()

    test = {}
    counts = {}
    for line in (args.dataset_dir / "test.txt").read_text().splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        user, items = int(fields[0]), [int(i) for i in fields[1:]]
        test[user] = set(items)
        for item in items:
            counts[item] = counts.get(item, 0) + 1

    items = sorted(counts)
    cumulative = []
    total = 0
    for item in items:
        total += counts[item]
        cumulative.append(total)

    rng = random.Random(args.seed)
    lines = []
    for user in sorted(test):
        chosen = []
        while len(chosen) < args.per_user:
            item = items[bisect.bisect_left(cumulative, rng.uniform(0, total))]
            if item not in test[user] and item not in chosen:
                chosen.append(item)
        lines.append(" ".join(str(x) for x in [user, *chosen]))
    (args.dataset_dir / "train.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
