def mean(values):
  total = 0
  for value in values:
    total += value
  return total / len(values)


def spread(values):
  if not values:
    return 0
  return max(values) - min(values)
