"""What belongs to no stage: the AWS clients (`aws_clients`), the invocation's deadline
(`deadline`), the settings' base and the retry policy (`settings`), the services' limits
(`limits`), a missing table's name and variable (`table_names`)."""
