// storage/src/columns.cpp — SQL text derived from the column lists of columns.h.
#include "columns.h"

#include <bit>
#include <string>

namespace ringside::storage::detail {
namespace {

bool inSet(ColumnSet set, int index) { return (set >> index) & 1; }

// "a, b, c": the names of the columns of `set`, in table order.
std::string nameList(const TableDef& t, ColumnSet set) {
  std::string out;
  for (int i = 0; i < t.count; ++i) {
    if (!inSet(set, i)) continue;
    if (!out.empty()) out += ", ";
    out += t.columns[i].name;
  }
  return out;
}

void padTo(std::string* line, size_t width) {
  if (line->size() < width) line->append(width - line->size(), ' ');
}

// "SELECT ... FROM name<tail>" of the columns of `listed`, each read if in `read` and not newer
// than `version`, else NULL.
std::string selectList(const TableDef& t, int version, std::string_view tail, ColumnSet listed,
                       ColumnSet read) {
  std::string sql = "SELECT ";
  bool first = true;
  for (int i = 0; i < t.count; ++i) {
    if (!inSet(listed, i)) continue;
    if (!first) sql += ", ";
    first = false;
    const Column& c = t.columns[i];
    sql += c.since <= version && inSet(read, i) ? c.name : "NULL";
  }
  sql += " FROM ";
  sql += t.name;
  sql += tail;
  return sql;
}

}  // namespace

std::string createTableSql(const TableDef& t) {
  std::string sql = std::string("CREATE TABLE ") + t.name + "(\n";
  const bool has_constraints = *t.constraints != '\0';
  for (int i = 0; i < t.count; ++i) {
    const Column& c = t.columns[i];
    std::string line = std::string("  ") + c.name;
    padTo(&line, 2 + static_cast<size_t>(t.name_width));
    line += ' ';
    line += c.decl;
    line += (i + 1 < t.count || has_constraints) ? ',' : ' ';
    padTo(&line, static_cast<size_t>(t.comment_column));
    if (line.back() != ' ') line += ' ';
    line += "-- ";
    line += c.comment;
    sql += line + '\n';
  }
  if (has_constraints) sql += std::string("  ") + t.constraints + '\n';
  return sql + ");\n";
}

std::string selectSql(const TableDef& t, int version, std::string_view tail, ColumnSet read) {
  return selectList(t, version, tail, kAllColumns, read);
}

std::string selectOnlySql(const TableDef& t, int version, std::string_view tail, ColumnSet read) {
  return selectList(t, version, tail, read, read);
}

std::string insertSql(const TableDef& t, std::string_view verb, ColumnSet written) {
  std::string sql(verb);
  sql += " INTO ";
  sql += t.name;
  sql += '(' + nameList(t, written) + ") VALUES(";
  const int n = std::popcount(written & ((ColumnSet{1} << t.count) - 1));
  for (int i = 0; i < n; ++i) {
    if (i) sql += ',';
    sql += '?' + std::to_string(i + 1);
  }
  return sql + ')';
}

std::string upsertSql(const TableDef& t, ColumnSet key) {
  std::string sql = insertSql(t) + " ON CONFLICT(";
  bool first = true;
  for (int i = 0; i < t.count; ++i) {
    if (!inSet(key, i)) continue;
    if (!first) sql += ", ";
    sql += t.columns[i].name;
    first = false;
  }
  sql += ") DO UPDATE SET";
  first = true;
  for (int i = 0; i < t.count; ++i) {
    if (inSet(key, i)) continue;
    const std::string name = t.columns[i].name;
    sql += first ? " " : ", ";
    sql += name + "=coalesce(excluded." + name + ", " + name + ')';
    first = false;
  }
  return sql;
}

}  // namespace ringside::storage::detail
