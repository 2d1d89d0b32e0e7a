targets="dns:///$fleet:@PORT@"
