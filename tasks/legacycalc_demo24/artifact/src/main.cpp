// main.cpp -- legacycalc: evaluate one RPN calibration formula per input line.
// Copyright 2013 the legacycalc authors. Apache-2.0.
//
// Usage: legacycalc < formulas.txt
// Blank lines and lines starting with '#' are skipped. Each formula prints
// "<line number> <value>" with six decimals, or "<line number> invalid: <reason>".
#include <cstdio>
#include <iostream>
#include <string>

#include "rpn.h"

int main() {
    legacycalc::Evaluator ev;
    std::string line;
    register int lineno = 0;
    int failures = 0;
    while (std::getline(std::cin, line)) {
        ++lineno;
        if (line.empty() || line[0] == '#') continue;
        try {
            std::printf("%d %.6f\n", lineno, ev.evaluate(line));
        } catch (const legacycalc::CalcError& e) {
            std::printf("%d invalid: %s\n", lineno, e.what());
            ++failures;
        }
    }
    std::fflush(stdout);
    std::fprintf(stderr, "legacycalc: %d lines read, %d invalid formulas\n", lineno, failures);
    return 0;
}
