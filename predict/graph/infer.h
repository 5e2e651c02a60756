/*
 * Shape and dtype inference over a graph.
 *
 * Every entry (node output) starts unknown. Variables are seeded from what
 * the caller knows (input shapes, parameter shapes) and from the "__shape__"
 * and "__dtype__" hints that Gluon writes. Then each operator completes what
 * it can from its neighbours, in forward and backward sweeps, until nothing
 * changes. Shapes flow both ways: an operator fills in its weights' shapes
 * from its data shape and attributes. A contradiction is an error naming the
 * node; anything left unknown is an error naming the first entry.
 */
#ifndef MXLITE_GRAPH_INFER_H_
#define MXLITE_GRAPH_INFER_H_

#include <map>
#include <string>
#include <vector>

#include "graph.h"

namespace mxlite {

using EntryShapes = std::vector<std::vector<Shape>>;  // [node][output]
using EntryDTypes = std::vector<std::vector<int>>;

// `known` holds variable shapes by name; `fallback` is used only for
// variables that inference alone leaves unknown (parameters from a file).
Status InferShapes(const Graph& graph, const std::map<std::string, Shape>& known,
                   const std::map<std::string, Shape>& fallback, EntryShapes* shapes);

Status InferDTypes(const Graph& graph, const std::map<std::string, int>& known,
                   EntryDTypes* dtypes);

// Parses a "__shape__" hint; MXNet's 0 (unknown dim) becomes -1, and "()"
// an unknown shape.
Shape ParseShapeHint(const std::string& text, bool* ok);

}  // namespace mxlite

#endif  // MXLITE_GRAPH_INFER_H_
