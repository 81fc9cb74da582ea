"""What Splice tests itself with, shipped because `splice test` and the
demo over Kafka use it too: the case runner and its row comparison, the
cases over Kafka, and the servers the project starts on 127.0.0.1 (a Kafka
broker, a schema registry, a Spark standalone cluster, a Spark Connect
server, moto's S3 server)."""
