# Python 2.7: small data batches in the format convdata.py's CIFARDataProvider reads (what the
# CIFAR-10 python batches hold): <dir>/batches.meta with data_mean (3072 x 1), num_vis and
# label_names, and <dir>/data_batch_<k> with data (3072 x N uint8, channel-major 32x32 RGB) and
# labels. Each class brightens its own band of rows, so a net can learn it in one epoch.
# Usage: python make_batches.py <dir> <batches> <cases per batch> <seed>
import cPickle
import os
import sys

import numpy as n

out, batches, cases, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = n.random.RandomState(seed)
if not os.path.isdir(out):
    os.makedirs(out)
total = n.zeros((3072, 1), dtype=n.float64)
for k in range(1, batches + 1):
    labels = rng.randint(0, 10, size=cases)
    images = rng.randint(0, 128, size=(cases, 3, 32, 32))
    for i, label in enumerate(labels):
        images[i, :, 3 * label:3 * label + 3, :] += 120
    data = n.require(images.reshape(cases, 3072).T, dtype=n.uint8, requirements='C')
    total += data.sum(axis=1, keepdims=True)
    with open(os.path.join(out, 'data_batch_%d' % k), 'wb') as f:
        cPickle.dump({'data': data, 'labels': [int(x) for x in labels]}, f, 2)
    print 'batch %d cases %d' % (k, cases)
meta = {'data_mean': (total / (batches * cases)).astype(n.float32), 'num_vis': 3072,
        'num_cases_per_batch': cases, 'label_names': ['class%d' % c for c in range(10)]}
with open(os.path.join(out, 'batches.meta'), 'wb') as f:
    cPickle.dump(meta, f, 2)
print 'meta written'
