-- Lenses' customers/orders join (lenses-stream-table-left): customers read as
-- a table, every order looked up in it; an order without a customer keeps
-- a NULL name.
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM orders);

INSERT INTO orders_enriched
SELECT STREAM
    customersTable.name
    , ordersStream.item
FROM
    ordersStream LEFT JOIN customersTable
        ON customersTable.id = ordersStream.customer_id;

-- The INNER form keeps matched orders only (lenses-stream-table-inner).
INSERT INTO orders_matched
SELECT STREAM customersTable.name, ordersStream.item
FROM ordersStream JOIN customersTable ON customersTable.id = ordersStream.customer_id;
