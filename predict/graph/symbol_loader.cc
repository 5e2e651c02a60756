/*
 * Symbol JSON loading, every MXNet version.
 *
 * Modern files (0.9 and later, NNVM format) have "nodes" with "op", "name",
 * "attrs" and 3-element "inputs" [node, output, version], plus "heads" and
 * attrs.mxnet_version. Older files differ in three ways that are upgraded
 * here, as MXNet's LoadLegacyJSON pass does:
 *   - attributes live under "param" and "attr" (merged with "attrs");
 *   - inputs have 2 elements [node, output];
 *   - before 0.9.0 (no mxnet_version means 0.8.0) auxiliary states were not
 *     in the graph: an operator listing fewer inputs than it has gets new
 *     variables named "<node>_<input>" (e.g. "bn0_moving_mean");
 *   - before 0.9.5, argmax/argmin wrote axis=-1 to mean "no axis" (the
 *     flattened input): that attribute is dropped.
 * Hidden training attributes (lr_mult, ctx_group, "__init__", ...) are kept
 * on the node but have no effect on inference.
 */
#include <cmath>
#include <memory>

#include "graph.h"
#include "json.h"

namespace mxlite {

namespace symbol_loader_cc {

constexpr int kVersion0900 = 900;  // MXNET_MAKE_VERSION(0, 9, 0)
constexpr int kVersion0905 = 905;  // MXNET_MAKE_VERSION(0, 9, 5)
constexpr int kDefaultVersion = 800;

Status ReadAttrObject(const JsonValue& object, const std::string& node_name, const char* key,
                      AttrMap* attrs) {
  MXL_CHECK(object.is_object(), "node '", node_name, "': \"", key, "\" must be an object, not ",
            JsonTypeName(object.type));
  for (const auto& member : object.object) {
    const JsonValue& value = member.second;
    if (value.is_string()) {
      (*attrs)[member.first] = value.string;
    } else if (value.is_number()) {
      // Some writers store numbers unquoted; keep an exact integer form.
      double number = value.number;
      (*attrs)[member.first] = number == std::floor(number) && std::fabs(number) < 1e15
                                   ? std::to_string(static_cast<long long>(number))
                                   : StrCat(number);
    } else {
      return Status::Error(StrCat("node '", node_name, "': attribute '", member.first,
                                  "' must be a string, not ", JsonTypeName(value.type)));
    }
  }
  return Status();
}

// Reads [node, output] or [node, output, version] with range checks against
// the nodes built so far (which makes the order topological).
Status ReadEntry(const JsonValue& value, const std::vector<int>& id_map, const Graph& graph,
                 const std::string& where, NodeEntry* entry) {
  MXL_CHECK(value.is_array() && (value.array.size() == 2 || value.array.size() == 3),
            where, ": an entry must be [node, output] or [node, output, version]");
  for (const JsonValue& item : value.array) {
    MXL_CHECK(item.is_number() && item.number >= 0 && item.number == std::floor(item.number),
              where, ": entry values must be non-negative integers");
  }
  double node = value.array[0].number;
  double index = value.array[1].number;
  MXL_CHECK(node < static_cast<double>(id_map.size()), where, ": refers to node ", node,
            ", which does not come before it (", id_map.size(), " nodes so far)");
  entry->node = id_map[static_cast<size_t>(node)];
  const Node& source = graph.nodes[entry->node];
  MXL_CHECK(index < source.num_outputs(), where, ": refers to output ", index, " of node '",
            source.name, "', which has ", source.num_outputs(), " output(s)");
  entry->index = static_cast<int>(index);
  return Status();
}

Status ReadVersion(const JsonValue& root, int* version) {
  *version = kDefaultVersion;
  const JsonValue* attrs = root.Find("attrs");
  if (attrs == nullptr || !attrs->is_object()) return Status();
  const JsonValue* entry = attrs->Find("mxnet_version");
  if (entry == nullptr) return Status();
  // Written as ["int", 10901] (a dmlc any).
  MXL_CHECK(entry->is_array() && entry->array.size() == 2 && entry->array[1].is_number(),
            "attrs.mxnet_version must be [\"int\", <version>]");
  // A version outside int (1e300, or 1e999 parsed as infinity) must not be
  // cast, which is undefined, nor pass as an old file: MXNet refuses it.
  const double number = entry->array[1].number;
  MXL_CHECK(number >= 0 && number <= 2147483647.0 && number == std::floor(number),
            "attrs.mxnet_version must be a whole number from 0 to 2147483647 (such as 10901 for "
            "1.9.1), not ", number);
  *version = static_cast<int>(number);
  return Status();
}

const JsonValue* RequireMember(const JsonValue& object, const char* key,
                               JsonValue::Type type, const std::string& where, Status* status) {
  const JsonValue* value = object.Find(key);
  if (value == nullptr) {
    *status = Status::Error(StrCat(where, ": missing \"", key, "\""));
    return nullptr;
  }
  if (value->type != type) {
    *status = Status::Error(StrCat(where, ": \"", key, "\" must be ",
                                   JsonTypeName(type), ", not ", JsonTypeName(value->type)));
    return nullptr;
  }
  return value;
}

// The optional top-level keys, when present, must have the types MXNet's JSON
// reader expects (it refuses "arg_nodes": 7 or "attrs": [1, 2] with "Expect '['"):
// "arg_nodes" and "node_row_ptr" lists of non-negative integers, "attrs" an
// object. mxlite does not need arg_nodes (variables are the "null" nodes), but
// MXNet checks that each names a variable node of the graph, so a file it
// refuses is refused here too (a node whose "op" is missing or not a string
// is left to BuildNode's message). node_row_ptr's values are not checked: MXNet ignores them.
Status CheckOptionalMembers(const JsonValue& root, const JsonValue& nodes) {
  for (const char* key : {"arg_nodes", "node_row_ptr"}) {
    const JsonValue* list = root.Find(key);
    if (list == nullptr) continue;
    MXL_CHECK(list->is_array(), "symbol JSON: \"", key, "\" must be an array, not ",
              JsonTypeName(list->type));
    for (size_t i = 0; i < list->array.size(); ++i) {
      const JsonValue& item = list->array[i];
      MXL_CHECK(item.is_number() && item.number >= 0 && item.number == std::floor(item.number),
                "symbol JSON: \"", key, "\" must hold non-negative integers; item ", i,
                " is ", item.is_number() ? StrCat(item.number) : JsonTypeName(item.type));
      if (std::string(key) != "arg_nodes") continue;
      MXL_CHECK(item.number < static_cast<double>(nodes.array.size()),
                "symbol JSON: \"arg_nodes\" item ", i, " refers to node ", item.number,
                " but the graph has ", nodes.array.size(), " nodes");
      const JsonValue& node = nodes.array[static_cast<size_t>(item.number)];
      const JsonValue* op = node.is_object() ? node.Find("op") : nullptr;
      MXL_CHECK(op == nullptr || !op->is_string() || op->string == "null",
                "symbol JSON: \"arg_nodes\" item ", i, " refers to node ", item.number,
                ", which is an operator (", op ? op->string : "", "), not a variable");
    }
  }
  if (const JsonValue* attrs = root.Find("attrs")) {
    MXL_CHECK(attrs->is_object(), "symbol JSON: \"attrs\" must be an object, not ",
              JsonTypeName(attrs->type));
  }
  return Status();
}

// Reads a node's "subgraphs": exactly one graph object ({"nodes", "heads"},
// nodes in topological order, entries [node, output(, version)]). Its
// operators are not built here: the operator taking it checks them.
Status ReadSubgraph(const JsonValue& subgraphs, const std::string& node_where, Subgraph* out) {
  MXL_CHECK(subgraphs.is_array(), node_where, ": \"subgraphs\" must be an array, not ",
            JsonTypeName(subgraphs.type));
  MXL_CHECK(subgraphs.array.size() == 1, node_where, ": \"subgraphs\" holds ",
            subgraphs.array.size(), " graphs; this operator takes exactly one");
  const JsonValue& graph = subgraphs.array[0];
  const std::string where = node_where + " subgraph";
  MXL_CHECK(graph.is_object(), where, " must be an object, not ", JsonTypeName(graph.type));
  Status status;
  const JsonValue* nodes = RequireMember(graph, "nodes", JsonValue::kArray, where, &status);
  if (nodes == nullptr) return status;
  const JsonValue* heads = RequireMember(graph, "heads", JsonValue::kArray, where, &status);
  if (heads == nullptr) return status;
  auto read_entry = [&](const JsonValue& value, size_t limit, const std::string& what,
                        std::pair<int, int>* entry) {
    MXL_CHECK(value.is_array() && (value.array.size() == 2 || value.array.size() == 3), what,
              ": an entry must be [node, output] or [node, output, version]");
    for (const JsonValue& item : value.array) {
      MXL_CHECK(item.is_number() && item.number >= 0 && item.number == std::floor(item.number) &&
                    item.number < 2147483647.0,
                what, ": entry values must be non-negative integers");
    }
    MXL_CHECK(value.array[0].number < static_cast<double>(limit), what, ": refers to node ",
              value.array[0].number, ", which does not come before it (", limit,
              " nodes so far)");
    *entry = {static_cast<int>(value.array[0].number), static_cast<int>(value.array[1].number)};
    return Status();
  };
  for (size_t i = 0; i < nodes->array.size(); ++i) {
    const JsonValue& json = nodes->array[i];
    const std::string node_at = StrCat(where, " node #", i);
    MXL_CHECK(json.is_object(), node_at, " must be an object");
    const JsonValue* op = RequireMember(json, "op", JsonValue::kString, node_at, &status);
    if (op == nullptr) return status;
    const JsonValue* name = RequireMember(json, "name", JsonValue::kString, node_at, &status);
    if (name == nullptr) return status;
    SubgraphNode node;
    node.op = op->string;
    node.name = name->string;
    for (const char* key : {"param", "attr", "attrs"}) {
      if (const JsonValue* attrs = json.Find(key)) {
        MXL_RETURN_IF_ERROR(ReadAttrObject(*attrs, node.name, key, &node.attrs));
      }
    }
    if (const JsonValue* nested = json.Find("subgraphs")) {
      MXL_CHECK(!nested->is_array() || nested->array.empty(), node_at,
                ": nested subgraphs are not supported");
    }
    if (const JsonValue* inputs = json.Find("inputs")) {
      MXL_CHECK(inputs->is_array(), node_at, ": \"inputs\" must be an array");
      for (size_t k = 0; k < inputs->array.size(); ++k) {
        std::pair<int, int> entry;
        MXL_RETURN_IF_ERROR(read_entry(inputs->array[k], i, StrCat(node_at, " input ", k), &entry));
        node.inputs.push_back(entry);
      }
    }
    out->nodes.push_back(std::move(node));
  }
  for (size_t i = 0; i < heads->array.size(); ++i) {
    std::pair<int, int> entry;
    MXL_RETURN_IF_ERROR(
        read_entry(heads->array[i], out->nodes.size(), StrCat(where, " head ", i), &entry));
    out->heads.push_back(entry);
  }
  return Status();
}

Status BuildNode(const JsonValue& json, size_t json_index, int version,
                 std::vector<int>* id_map, Graph* graph) {
  const std::string where = StrCat("node #", json_index);
  MXL_CHECK(json.is_object(), where, " must be an object");
  Status status;
  const JsonValue* op = RequireMember(json, "op", JsonValue::kString, where, &status);
  if (op == nullptr) return status;
  const JsonValue* name = RequireMember(json, "name", JsonValue::kString, where, &status);
  if (name == nullptr) return status;

  Node node;
  node.name = name->string;
  const std::string node_where = StrCat("node '", node.name, "'");
  for (const char* key : {"param", "attr", "attrs"}) {
    if (const JsonValue* attrs = json.Find(key)) {
      MXL_RETURN_IF_ERROR(ReadAttrObject(*attrs, node.name, key, &node.attrs));
    }
  }
  const JsonValue* subgraphs = json.Find("subgraphs");
  if (subgraphs != nullptr && subgraphs->is_array() && subgraphs->array.empty()) {
    subgraphs = nullptr;
  }
  if (const JsonValue* inputs = json.Find("inputs")) {
    MXL_CHECK(inputs->is_array(), node_where, ": \"inputs\" must be an array");
    for (size_t i = 0; i < inputs->array.size(); ++i) {
      NodeEntry entry;
      MXL_RETURN_IF_ERROR(ReadEntry(inputs->array[i], *id_map, *graph,
                                    StrCat(node_where, " input ", i), &entry));
      node.inputs.push_back(entry);
    }
  }

  if (op->string == "null") {
    MXL_CHECK(subgraphs == nullptr, node_where, ": a variable (op \"null\") cannot have "
              "subgraphs");
    MXL_CHECK(node.inputs.empty(), node_where, ": a variable (op \"null\") cannot have inputs");
    node.op_name = "null";
  } else {
    if (version < kVersion0905 && (op->string == "argmax" || op->string == "argmin")) {
      // Before 0.9.5, axis=-1 was how argmax/argmin said "no axis".
      auto axis = node.attrs.find("axis");
      if (axis != node.attrs.end() && axis->second == "-1") node.attrs.erase(axis);
    }
    std::unique_ptr<Operator> created;
    MXL_RETURN_IF_ERROR(CreateOperator(op->string, node.name, node.attrs, &created));
    if (created->TakesSubgraph()) {
      MXL_CHECK(subgraphs != nullptr, node_where, " (", op->string,
                "): the node has no \"subgraphs\" entry, which this operator needs (the "
                "graph it fuses)");
      std::shared_ptr<Subgraph> subgraph = std::make_shared<Subgraph>();
      MXL_RETURN_IF_ERROR(ReadSubgraph(*subgraphs, node_where, subgraph.get()));
      MXL_RETURN_IF_ERROR(created->SetSubgraph(*subgraph));
      node.subgraph = std::move(subgraph);
    } else {
      MXL_CHECK(subgraphs == nullptr, node_where, " (", op->string,
                "): operators with subgraphs (control flow) are not supported");
    }
    node.op.reset(created.release());
    node.op_name = CanonicalOpName(op->string);
    const std::vector<std::string> input_names = node.op->InputNames();
    const size_t want = input_names.size();
#ifdef MXLITE_NO_LEGACY_JSON
    (void)version;  // LoadSymbolJson rejected files from before 0.9
#else
    if (node.inputs.size() < want && version < kVersion0900) {
      // Pre-0.9 files lack auxiliary-state variables: add them.
      for (size_t i = node.inputs.size(); i < want; ++i) {
        Node variable;
        variable.name = node.name + "_" + input_names[i];
        variable.op_name = "null";
        for (const auto& attr : node.attrs) {
          if (IsHiddenAttr(attr.first)) variable.attrs.insert(attr);
        }
        graph->nodes.push_back(std::move(variable));
        node.inputs.push_back(NodeEntry{static_cast<int>(graph->nodes.size()) - 1, 0});
      }
    }
#endif  // MXLITE_NO_LEGACY_JSON
    if (node.inputs.size() != want) {
      std::string names;
      for (size_t i = 0; i < want; ++i) names += (i ? ", " : "") + input_names[i];
      return Status::Error(StrCat(node_where, " (", node.op_name, ") has ", node.inputs.size(),
                                  " input(s) but needs ", want, " (", names, ")"));
    }
  }
  graph->nodes.push_back(std::move(node));
  id_map->push_back(static_cast<int>(graph->nodes.size()) - 1);
  return Status();
}

}  // namespace symbol_loader_cc

Status LoadSymbolJson(const char* text, size_t size, Graph* out) {
  using namespace symbol_loader_cc;
  *out = Graph();
  JsonValue root;
  MXL_RETURN_IF_ERROR(ParseJson(text, size, &root).WithContext("symbol JSON: "));
  MXL_CHECK(root.is_object(), "symbol JSON: the document must be an object, not ",
            JsonTypeName(root.type));
  Status status;
  const JsonValue* nodes = RequireMember(root, "nodes", JsonValue::kArray, "symbol JSON", &status);
  if (nodes == nullptr) return status;
  const JsonValue* heads = RequireMember(root, "heads", JsonValue::kArray, "symbol JSON", &status);
  if (heads == nullptr) return status;
  MXL_CHECK(!nodes->array.empty(), "symbol JSON: the graph has no nodes");
  MXL_RETURN_IF_ERROR(CheckOptionalMembers(root, *nodes));
  MXL_RETURN_IF_ERROR(ReadVersion(root, &out->mxnet_version).WithContext("symbol JSON: "));
#ifdef MXLITE_NO_LEGACY_JSON
  MXL_CHECK(out->mxnet_version >= kVersion0900,
            "symbol JSON: the file was written by MXNet ", out->mxnet_version / 10000, ".",
            out->mxnet_version / 100 % 100, " (before 0.9.0); this build leaves out the legacy "
            "upgrade such files need (MXLITE_NO_LEGACY_JSON)");
#endif  // MXLITE_NO_LEGACY_JSON

  std::vector<int> id_map;  // JSON node id -> index in out->nodes
  id_map.reserve(nodes->array.size());
  for (size_t i = 0; i < nodes->array.size(); ++i) {
    MXL_RETURN_IF_ERROR(
        BuildNode(nodes->array[i], i, out->mxnet_version, &id_map, out).WithContext("symbol JSON: "));
  }
  MXL_CHECK(!heads->array.empty(), "symbol JSON: \"heads\" is empty: the graph has no outputs");
  for (size_t i = 0; i < heads->array.size(); ++i) {
    NodeEntry entry;
    MXL_RETURN_IF_ERROR(ReadEntry(heads->array[i], id_map, *out, StrCat("symbol JSON: head ", i),
                                  &entry));
    out->outputs.push_back(entry);
  }
  return Status();
}

}  // namespace mxlite
