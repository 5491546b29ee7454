#include "graph/graph.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace nxrt {
namespace {

Node MakeNode(Graph& g, const std::string& op, const std::vector<std::string>& ins,
              const std::vector<std::string>& outs) {
  Node n;
  n.op_type = op;
  n.name = op + "_" + outs[0];
  for (const auto& i : ins) n.inputs.push_back(i.empty() ? -1 : g.GetOrAddValue(i));
  for (const auto& o : outs) n.outputs.push_back(g.GetOrAddValue(o));
  return n;
}

TEST(Graph, FinalizeLinksAndSorts) {
  Graph g;
  int x = g.GetOrAddValue("x");
  g.value(x).is_graph_input = true;
  g.inputs.push_back(x);
  g.nodes.push_back(MakeNode(g, "Relu", {"a"}, {"y"}));
  g.nodes.push_back(MakeNode(g, "Neg", {"x", ""}, {"a"}));
  g.outputs.push_back(g.FindValue("y"));
  g.value(g.FindValue("y")).is_graph_output = true;
  g.Finalize();
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "Neg");
  EXPECT_EQ(g.nodes[1].op_type, "Relu");
  EXPECT_EQ(g.value(g.FindValue("a")).producer, 0);
  EXPECT_EQ(g.value(g.FindValue("a")).consumers, std::vector<int>{1});
  EXPECT_EQ(g.nodes[0].inputs[1], -1);  // omitted optional input survives
}

TEST(Graph, OuterScopeValuesResolveInSubgraphs) {
  Graph outer;
  int v = outer.GetOrAddValue("outer_value");
  outer.value(v).is_graph_input = true;
  Graph body;
  body.parent = &outer;
  body.nodes.push_back(MakeNode(body, "Identity", {"outer_value"}, {"out"}));
  body.outputs.push_back(body.FindValue("out"));
  body.Finalize();
  EXPECT_TRUE(body.value(body.FindValue("outer_value")).is_outer_scope);

  Graph orphan;
  orphan.nodes.push_back(MakeNode(orphan, "Identity", {"nowhere"}, {"out"}));
  orphan.outputs.push_back(orphan.FindValue("out"));
  EXPECT_THROW(orphan.Finalize(), Error);
}

}  // namespace
}  // namespace nxrt
