"""The change feed: the table's stream read once per server instance and handed to every worker.

The table has a DynamoDB stream with both images of every changed item (NEW_AND_OLD_IMAGES,
datastore/upkeep/provision.py). Here it becomes typed change events, and nothing here knows what
reads them (the API's live updates, graphql_api/subscriptions/):

- ``records``: a stream record as the reader hands it on (``StreamRecord``: its keys, both
  images, its shard and sequence number) and, decoded through the item layouts
  (datastore/kinds/layout.py), a ``ChangeEvent``: the kind of item, the organisation its key
  belongs to, what changed, and the entity before and after.
- ``shards``: the order shards are read in: a parent to its end before its children.
- ``reader``: ``StreamReader`` follows the stream's shards, checkpoints each shard as it
  hands its records on, and survives DynamoDB Local's quirks and expired iterators.
- ``lease``: one reader per server instance, elected by a lease item with an expiry (a
  conditional write; a crashed holder's lease is taken over once it expires).
- ``fanout``: the reader hands each record to every worker of its instance over a Unix
  socket, its organisation in a frame header, so a worker routes it before decoding it.
- ``host``: what each worker process runs: the lease, the reader while it holds it, and its
  own connection to whichever worker reads.

Several instances on one table (several hosts) each read every shard: DynamoDB Streams serves
at most two simultaneous readers per shard before it throttles GetRecords (AWS's guidance: "no
more than two processes at most should be reading from the same streams shard at the same
time"). So at most two instances may follow one table's stream; a stream-triggered Lambda
counts as one. Beyond that, throttled reads back off and retry (the reader never drops a
record, it falls behind) and the live updates of every instance arrive late.
"""
