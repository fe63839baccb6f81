"""Write a stand-in for ETTh1.csv: the same header, the same 17,420 hourly rows from
2016-07-01 00:00:00 and the same seven columns (six transformer loads, then the oil temperature
OT), with daily and weekly load cycles, a yearly drift and noise.

The real file is only on Google Drive and Tsinghua Cloud, which this machine cannot reach;
data_provider/data_loader.py (Dataset_ETT_hour) reads any file of this shape.
Usage: python dataset/make_etth1.py OUT.csv
"""

import datetime
import math
import random
import sys

ROWS = 17420
COLUMNS = ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL"]
LEVEL = [6.0, 2.0, 4.0, 1.0, 3.0, 1.2]
DAILY = [3.0, 0.8, 2.5, 0.6, 1.2, 0.4]
WEEKLY = [0.8, 0.3, 0.6, 0.2, 0.4, 0.1]


def main(out: str) -> None:
    rng = random.Random(20160701)
    start = datetime.datetime(2016, 7, 1)
    with open(out, "w", encoding="ascii") as f:
        f.write("date," + ",".join(COLUMNS) + ",OT\n")
        for i in range(ROWS):
            year = math.sin(2 * math.pi * i / 8760)
            loads = [
                LEVEL[c]
                + DAILY[c] * math.sin(2 * math.pi * (i + 3 * c) / 24)
                + WEEKLY[c] * math.sin(2 * math.pi * i / 168)
                + 0.5 * year
                + rng.gauss(0, 0.15 * DAILY[c])
                for c in range(6)
            ]
            ot = 15 + 10 * year + 0.9 * loads[0] + rng.gauss(0, 0.5)
            stamp = (start + datetime.timedelta(hours=i)).strftime("%Y-%m-%d %H:%M:%S")
            f.write(stamp + "," + ",".join(f"{v:.3f}" for v in [*loads, ot]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
