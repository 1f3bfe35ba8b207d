"""The workings of `check_effectively_once` (`..effectively_once`): the driver that invokes the
handler with faults in its writes (`driver`, the faults owed at each write: `schedule`), two
invocations at once (`overlap`), the function's own mapping settings (`mapping`), the report and
its verdict (`report`), the check's clock (`clock`), the event sources played (`sources`), and
DynamoDB's own behaviour (`dynamodb`: its failures, TTL and tokens forgotten, stale reads)."""
