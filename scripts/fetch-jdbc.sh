#!/usr/bin/env bash
# Fetches the Arrow Flight SQL JDBC driver (Maven Central) for the test of
# skyhook serve with a JVM client; nothing to do without Java and Maven.
set -euo pipefail
if command -v java > /dev/null && command -v mvn > /dev/null; then
  mvn -q dependency:get -Dartifact=org.apache.arrow:flight-sql-jdbc-driver:18.3.0 -Dtransitive=false
fi
