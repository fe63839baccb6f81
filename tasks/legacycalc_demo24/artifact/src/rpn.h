// rpn.h -- reverse Polish notation evaluator for calibration formulas.
// Copyright 2013 the legacycalc authors. Apache-2.0.
#ifndef LEGACYCALC_RPN_H
#define LEGACYCALC_RPN_H

#include <stdexcept>
#include <string>
#include <vector>

namespace legacycalc {

class CalcError : public std::runtime_error {
public:
    explicit CalcError(const std::string& what) : std::runtime_error(what) {}
};

class Evaluator {
public:
    Evaluator();
    // Evaluates one line of RPN tokens; throws CalcError on bad input.
    double evaluate(const std::string& line) throw(CalcError);

private:
    void apply(const std::string& op) throw(CalcError);
    double pop() throw(CalcError);
    std::vector<double> stack_;
};

}  // namespace legacycalc

#endif
