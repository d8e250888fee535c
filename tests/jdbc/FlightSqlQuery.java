// What a JVM tool does through the Arrow Flight SQL JDBC driver: list the
// tables, run a prepared statement and a plain one; prints what it read.
// Run as a single-file program: java -cp flight-sql-jdbc-driver.jar FlightSqlQuery.java URL
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;

public class FlightSqlQuery {
  public static void main(String[] args) throws Exception {
    try (Connection connection = DriverManager.getConnection(args[0])) {
      try (ResultSet tables = connection.getMetaData().getTables(null, null, "%", null)) {
        while (tables.next()) {
          System.out.println("table " + tables.getString("TABLE_NAME"));
        }
      }
      String grouped = "select flag, count(*) as n from lineitem where id >= 1000 group by flag order by flag";
      try (PreparedStatement statement = connection.prepareStatement(grouped);
          ResultSet rows = statement.executeQuery()) {
        while (rows.next()) {
          System.out.println("group " + rows.getString(1) + " " + rows.getLong(2));
        }
      }
      try (Statement statement = connection.createStatement();
          ResultSet rows = statement.executeQuery("select count(*) from lineitem")) {
        rows.next();
        System.out.println("count " + rows.getLong(1));
      }
    }
  }
}
