"""The event sources the effectively-once check plays: its seeded choices and what every run owes
(`draws`), SQS standard and FIFO queues (`queues`), Kafka partitions and stream shards
(`lanes`), order judged on FIFO responses (`order`), a producer's retry and SNS's redelivery
(`retries`), what a run still owes at its end (`owed`), and the late redeliveries (`late`)."""
