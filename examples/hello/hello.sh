#!/bin/sh
# Each rank says who it is, "trains" for $STEPS steps, and rank 0 reports.
echo "$GREETING from rank $RANK/$WORLD_SIZE (local $LOCAL_RANK on $ATL_POD_NAME, master $MASTER_ADDR:$MASTER_PORT)"
i=1
while [ "$i" -le "$STEPS" ]; do
  echo "rank $RANK step $i/$STEPS"
  i=$((i + 1))
done
if [ "$RANK" = 0 ]; then
  echo "rank 0 asks the supervisor of $ATL_JOB_ID: $(atlctl status)"
fi
