#!/usr/bin/env bash
# Fetches the Arrow Flight SQL JDBC driver (Maven Central) for the test of
# skyhook serve with a JVM client. Without Java and Maven, or if the fetch
# fails, that test skips and says why; nothing else depends on it.
set -euo pipefail
if command -v java > /dev/null && command -v mvn > /dev/null; then
  mvn -q dependency:get -Dartifact=org.apache.arrow:flight-sql-jdbc-driver:18.3.0 -Dtransitive=false \
    || echo "fetch-jdbc.sh: could not fetch the Flight SQL JDBC driver; its test will skip" >&2
fi
