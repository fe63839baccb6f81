#!/bin/sh
# Writes N newline-delimited JSON log events to stdout (ts in ms, level, service, message, code).
awk -v n="$1" 'BEGIN {
  split("INFO WARN ERROR DEBUG INFO INFO WARN", lv, " ");
  for (i = 0; i < n; i++) {
    printf "{\"ts\":%.0f,\"level\":\"%s\",\"svc\":\"svc-%d\",\"msg\":\"request %d took %d ms\",\"code\":%d}\n",
      1700000000000 + i * 37, lv[i % 7 + 1], i % 5, i, (i * 7919) % 1000, i % 13
  }
}'
