-- Runs killed away from the test's own Spark (tests/engine/test_cluster.py on a
-- standalone cluster, tests/engine/test_connect.py under Spark Connect): a JSON file
-- source with its dead letter, a projection (an append: a micro-batch written
-- twice would show) and a table-table join (a MERGE).
CREATE STREAM orders (id INT, customer_id INT, item STRING, amount INT, ts TIMESTAMP)
  WITH (location='orders', format='json', key='id', timestamp='ts');
CREATE TABLE customers (id INT, name STRING, tier INT, ts TIMESTAMP)
  WITH (location='customers', key='id', timestamp='ts');
CREATE TABLE tiers (id INT, label STRING, grp INT, ts TIMESTAMP)
  WITH (location='tiers', key='id', timestamp='ts');

INSERT INTO big_orders SELECT STREAM id, item, amount FROM orders WHERE amount > 1;
CREATE TABLE customer_tiers AS
SELECT c.id AS cid, c.name AS name, t.label AS label
FROM customers c LEFT JOIN tiers t ON c.tier = t.id;
