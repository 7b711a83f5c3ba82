// Internal to core/store: the schema migrations, one SQL script per version.
#pragma once

namespace inferdesk::store::detail {

// The SQL that turns a database of version `version - 1` into `version` (1..kSchemaVersion).
const char* migration_sql(int version);

}  // namespace inferdesk::store::detail
