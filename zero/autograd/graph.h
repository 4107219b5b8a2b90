/// @file
/// `graph_to_string`: the autograd graph recorded behind a tensor, as an indented tree.
///
/// Each recorded op prints as a line with its name, a number and the shape of the
/// output that the line's parent consumes; its inputs follow, indented. Leaves print
/// whether they require grad (and whether they already hold a gradient). An op used
/// by several consumers is printed once and referred to by its number afterwards.
/// Chapter 06 uses it to show the graph `a + b` records. Read next: engine.cpp.
#pragma once

#include <string>

#include "zero/core/tensor.h"

namespace zero::autograd {

/// The graph `Backward()` would walk from `root`, one node per line, inputs indented
/// two spaces below their consumer, for example:
///
///     OpMul #1 -> [2, 3] f32 cpu
///       OpAdd #2 -> [2, 3] f32 cpu
///         leaf #3 [2, 3] f32 cpu requires_grad
///         leaf #4 [3] f32 cpu requires_grad
///       leaf #3 [2, 3] f32 cpu requires_grad
///
/// A tensor with no recorded history (made by the user, computed under `NoGradGuard`,
/// or from inputs that need no grad) prints as a single leaf line. An op whose graph
/// a `Backward()` already freed says so instead of listing inputs. Output stops after
/// `max_lines` lines, so an accidental million-op graph stays printable.
std::string graph_to_string(const Tensor& root, int max_lines = 200);

}  // namespace zero::autograd
