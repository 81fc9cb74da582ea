-- The crash-safety pipeline: one step of every kind (tests/crash/test_crash_safety.py).
-- Sources: orders as JSON-lines files, customers, payments and ranks as Delta.
CREATE STREAM orders (id INT, customer_id INT, item STRING, amount INT, ts TIMESTAMP)
  WITH (location='orders', format='json', key='id', timestamp='ts');
CREATE STREAM customers (id INT, name STRING, tier INT, ts TIMESTAMP)
  WITH (location='customers', key='id', timestamp='ts');
CREATE STREAM payments (pid INT, order_id INT, paid INT, ts TIMESTAMP)
  WITH (location='payments', key='pid', timestamp='ts');
CREATE TABLE tiers (id INT, label STRING, grp INT, ts TIMESTAMP)
  WITH (location='tiers', key='id', timestamp='ts');

-- materialization, projection (with a filter), repartition, stream-table join
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH bigOrders AS (SELECT STREAM * FROM orders WHERE amount > 0);
INSERT INTO enriched
SELECT STREAM customersTable.name, bigOrders.item, bigOrders.amount
FROM bigOrders LEFT JOIN customersTable ON customersTable.id = bigOrders.customer_id;

-- stream-stream, inner and left (null-padded rows when the window closes)
INSERT INTO paid_inner
SELECT STREAM o.id AS oid, o.item AS item, p.paid AS paid
FROM orders o JOIN payments p WITHIN 10 MINUTES ON o.id = p.order_id;
INSERT INTO paid_left
SELECT STREAM o.id AS oid, o.item AS item, p.paid AS paid
FROM orders o LEFT JOIN payments p WITHIN 10 MINUTES ON o.id = p.order_id;

-- table-table: primary key, and many-to-many
CREATE TABLE customer_tiers AS
SELECT c.name AS name, t.label AS label FROM customersTable c JOIN tiers t ON c.id = t.id;
CREATE TABLE same_tier AS
SELECT c.id AS cid, t.id AS tid FROM customersTable c JOIN tiers t ON c.tier = t.grp;

-- ASOF: each order with the latest payment of its order at or before it
CREATE TABLE last_payment AS
SELECT o.id AS oid, p.paid AS paid FROM orders o ASOF LEFT JOIN payments p
  ON o.id = p.order_id AND p.ts <= o.ts;

-- aggregation
CREATE TABLE spend AS
SELECT customer_id, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY customer_id;

-- a query over one table: tiers move in and out of its filter from round to round
CREATE TABLE upper_tiers AS SELECT id, label FROM tiers WHERE grp > 1;
