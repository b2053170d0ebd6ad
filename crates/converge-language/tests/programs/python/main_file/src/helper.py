def greeting():
    return "hello from a helper module"
