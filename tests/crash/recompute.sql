-- The table-table join's recompute plan under kills (tests/crash/test_crash_recompute.py):
-- customer_tiers is read by the step after it, so a recompute MERGEs the rows
-- that differ; same_tier is read by none, so a recompute overwrites it.
CREATE TABLE customers (id INT, name STRING, tier INT, ts TIMESTAMP)
  WITH (location='customers', key='id', timestamp='ts');
CREATE TABLE tiers (id INT, label STRING, grp INT, ts TIMESTAMP)
  WITH (location='tiers', key='id', timestamp='ts');

CREATE TABLE customer_tiers AS
SELECT c.id AS cid, c.name AS name, t.label AS label
FROM customers c LEFT JOIN tiers t ON c.tier = t.id;
CREATE TABLE labelled AS SELECT cid, label FROM customer_tiers WHERE label IS NOT NULL;
CREATE TABLE same_tier AS
SELECT c.id AS cid, t.id AS tid FROM customers c JOIN tiers t ON c.tier = t.grp;
