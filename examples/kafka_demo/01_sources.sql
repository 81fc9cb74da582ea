-- The demo's sources on Kafka topics, in ksqlDB's words: each record's
-- value is a JSON object, its key the id as text (ksqlDB's KAFKA key format).
-- A value that does not fit the schema goes to the dead-letter table, with
-- its topic, partition and offset; the run goes on.
CREATE STREAM customers (id INT KEY, name STRING)
  WITH (kafka_topic='demo_customers', value_format='JSON');

CREATE STREAM orders (id INT KEY, customer_id INT, item STRING)
  WITH (kafka_topic='demo_orders', value_format='JSON');
