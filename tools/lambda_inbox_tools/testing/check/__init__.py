"""The workings of `check_effectively_once` (`..effectively_once`): the event sources played
(`players`), the function's own mapping settings (`mapping`), a producer's retry and SNS's
redelivery (`retries`), DynamoDB's own failures of a write as the service answers them
(`dynamodb_answers`, through `crashes.CrashSwitch`), order judged on responses (`order`), two
invocations holding one message (`overlap`), what a run still owes at its end (`owed`), and
time: the check's clock (`clock`), what DynamoDB forgets with it (`expiry`), the late
redeliveries (`late`)."""
