-- The demo's sources: customers arrive as a Delta table, orders as JSON
-- lines files (a record that does not fit the schema goes to the dead-letter
-- table; the run goes on).
CREATE STREAM customers (id INT, name STRING)
  WITH (location='demo/customers', key='id');

CREATE STREAM orders (id INT, customer_id INT, item STRING)
  WITH (location='demo/orders', format='json', key='id');
