// rpn.cpp -- reverse Polish notation evaluator for calibration formulas.
// Copyright 2013 the legacycalc authors. Apache-2.0.
#include "rpn.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace legacycalc {

Evaluator::Evaluator() {}

double Evaluator::pop() throw(CalcError) {
    if (stack_.empty()) throw CalcError("stack underflow");
    double v = stack_.back();
    stack_.pop_back();
    return v;
}

void Evaluator::apply(const std::string& op) throw(CalcError) {
    if (op == "sqrt") {
        double a = pop();
        if (a < 0) throw CalcError("sqrt of a negative number");
        stack_.push_back(std::sqrt(a));
        return;
    }
    if (op == "neg") { stack_.push_back(-pop()); return; }
    if (op == "dup") { double a = pop(); stack_.push_back(a); stack_.push_back(a); return; }
    if (op == "swap") {
        double b = pop(), a = pop();
        stack_.push_back(b); stack_.push_back(a);
        return;
    }
    register double b = pop();
    register double a = pop();
    if (op == "+") stack_.push_back(a + b);
    else if (op == "-") stack_.push_back(a - b);
    else if (op == "*") stack_.push_back(a * b);
    else if (op == "/") {
        if (b == 0) throw CalcError("division by zero");
        stack_.push_back(a / b);
    } else if (op == "^") stack_.push_back(std::pow(a, b));
    else throw CalcError("unknown operator '" + op + "'");
}

double Evaluator::evaluate(const std::string& line) throw(CalcError) {
    stack_.clear();
    std::istringstream in(line);
    std::string tok;
    while (in >> tok) {
        char* end = 0;
        double v = std::strtod(tok.c_str(), &end);
        if (end != tok.c_str() && *end == '\0') stack_.push_back(v);
        else apply(tok);
    }
    if (stack_.size() != 1) throw CalcError("formula does not reduce to one value");
    return stack_.back();
}

}  // namespace legacycalc
